"""The release of Arborgraph this code is (recorded in every manifest it writes)."""

__version__ = "0.1.0"
