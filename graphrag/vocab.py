"""Entity types and the small fixed vocabularies the rule-based extractor relies on."""

from __future__ import annotations

# Types the rule-based extractor assigns. "Strong" types come from a pattern that
# says what the thing is (PRAGMA x, f(), --flag, x.h); "weak" types are a guess from
# the shape of a word and give way to a strong type during resolution.
STRONG_TYPES = frozenset(
    {
        "statement",
        "command",
        "function",
        "parameter",
        "option",
        "file",
        "data_type",
        "error_code",
        "class",
        "module",
    }
)
WEAK_TYPES = frozenset({"constant", "keyword", "acronym", "identifier", "component", "term"})
ENTITY_TYPES = tuple(sorted(STRONG_TYPES | WEAK_TYPES))

# "the journal_mode pragma", "the VACUUM command": a head noun right after a name
# says its type.
HEAD_NOUN_TYPES = {
    "pragma": "parameter",
    "pragmas": "parameter",
    "setting": "parameter",
    "settings": "parameter",
    "parameter": "parameter",
    "parameters": "parameter",
    "variable": "parameter",
    "statement": "statement",
    "statements": "statement",
    "clause": "statement",
    "command": "command",
    "commands": "command",
    "function": "function",
    "functions": "function",
    "method": "function",
    "methods": "function",
    "routine": "function",
    "interface": "function",
    "api": "function",
    "option": "option",
    "options": "option",
    "flag": "option",
    "flags": "option",
    "switch": "option",
    "constant": "constant",
    "constants": "constant",
    "macro": "constant",
    "error": "error_code",
    "errors": "error_code",
    "exception": "error_code",
    "class": "class",
    "module": "module",
    "package": "module",
    "file": "file",
    "files": "file",
    "header": "file",
    "keyword": "keyword",
    "keywords": "keyword",
    "opcode": "constant",
    "type": "data_type",
}

# Uppercase words that begin an SQL statement (first word of a keyword run).
STATEMENT_WORDS = frozenset(
    """
    SELECT INSERT UPDATE DELETE REPLACE UPSERT CREATE DROP ALTER VACUUM ANALYZE ATTACH
    DETACH BEGIN COMMIT ROLLBACK SAVEPOINT RELEASE REINDEX EXPLAIN PRAGMA END
    """.split()
)

# Uppercase words of SQL clauses: keywords, not acronyms (WHERE, ORDER BY).
SQL_KEYWORDS = frozenset(
    """
    WHERE FROM ORDER GROUP BY HAVING JOIN INNER OUTER LEFT RIGHT CROSS NATURAL LIMIT
    OFFSET USING VALUES SET INTO DISTINCT UNION INTERSECT EXCEPT CASE WHEN THEN ELSE
    LIKE GLOB REGEXP MATCH BETWEEN EXISTS COLLATE DEFAULT CHECK UNIQUE CONSTRAINT
    REFERENCES CASCADE RESTRICT RETURNING WINDOW OVER PARTITION FILTER TRIGGER INDEX
    TABLE VIEW TEMP TEMPORARY VIRTUAL PRIMARY FOREIGN KEY ROWID AUTOINCREMENT ASC DESC
    NULLS FIRST LAST CONFLICT ABORT FAIL IGNORE ROLLBACK DEFERRED IMMEDIATE EXCLUSIVE
    TRANSACTION RECURSIVE MATERIALIZED GENERATED ALWAYS STORED CAST ESCAPE INSTEAD
    BEFORE AFTER EACH ROW FOR OF ON AS IS NOT AND OR IN ALL ANY ISNULL NOTNULL
    """.split()
)

DATA_TYPES = frozenset(
    """
    INTEGER INT TINYINT SMALLINT MEDIUMINT BIGINT REAL DOUBLE FLOAT NUMERIC DECIMAL
    BOOLEAN DATE DATETIME TEXT CHAR VARCHAR NCHAR NVARCHAR CLOB BLOB NULL
    int str bytes bytearray float bool list dict tuple set frozenset complex memoryview
    """.split()
)

# Uppercase words that are emphasis or boilerplate rather than entities.
UPPER_NOISE = frozenset(
    """
    NOTE WARNING TODO FIXME IMPORTANT TIP CAUTION OK NO YES AND OR NOT THE A AN IF IS
    OF TO IN ON AT BY FOR WITH AS BE IT ALL ANY SOME NEW OLD ONE TWO DO
    I II III IV V VI VII VIII IX X
    """.split()
)

# Words that make a candidate multi-word term generic ("following example").
GENERIC_WORDS = frozenset(
    """
    following above below previous next first second third last new same different
    various certain specific particular example examples case cases time times number
    numbers way ways thing things part parts section sections chapter page pages
    document documentation note notes detail details information reason reasons result
    results problem problems question questions answer course fact end beginning
    general usual usually typical typically simple simply good better best bad large
    small big little much many several lot lots kind kinds sort sorts important possible
    able whole entire full half top bottom left right true false yes per etc mean means
    hand order instance instances purpose purposes idea ideas rest start way use
    version versions release releases year years day days
    zero two three four five six seven eight nine ten hundred thousand million nth th
    fourth fifth sixth seventh eighth ninth tenth feature features
    """.split()
)

# Third-person verbs and participles that often follow a noun in a sentence and so
# form frequent but meaningless bigrams ("function returns", "database contains").
VERBISH = frozenset(
    """
    returns contains causes allows provides requires means occurs becomes includes
    supports specifies determines makes takes gives uses works runs appears holds
    shows tells says seems tries wants needs helps keeps leaves moves changes sets
    reads writes opens closes creates deletes updates inserts stores loads calls
    invokes refers describes defines explains prevents enables disables controls
    limits fails succeeds exists happens remains continues begins ends starts stops
    attempts behaves contributes conforms occur behave contribute conform exist appear
    attempt return require work apply cause allow provide take make become remain
    """.split()
)

# Phrases that introduce a definition right after the entity that starts a sentence.
DEFINITION_VERBS = (
    "is",
    "are",
    "was",
    "means",
    "refers to",
    "returns",
    "controls",
    "sets",
    "queries",
    "specifies",
    "determines",
    "causes",
    "provides",
    "implements",
    "works",
)
