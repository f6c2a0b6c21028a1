"""Folder trees nested deeper than Python's recursion limit: ``os.makedirs`` and
``shutil.rmtree`` recurse one frame a level in Python 3.11, so these loop instead."""

from __future__ import annotations

from pathlib import Path


def make_deep(root: Path, depth: int, name: str = "d") -> Path:
    """``depth`` folders named ``name``, each in the one before, below ``root``; the deepest."""
    root.mkdir(parents=True, exist_ok=True)
    path = root
    for _ in range(depth):
        path = path / name
        path.mkdir()
    return path


def remove_deep(top: Path) -> None:
    """Remove the folder tree ``top``, however deep."""
    folders, found = [top], []
    while folders:
        folder = folders.pop()
        found.append(folder)
        for child in folder.iterdir():
            if child.is_dir() and not child.is_symlink():
                folders.append(child)
            else:
                child.unlink()
    for folder in reversed(found):
        folder.rmdir()
