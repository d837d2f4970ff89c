"""Reading the project's git history: revisions, merge bases, files at a commit."""

from __future__ import annotations

import subprocess
from pathlib import Path

from .errors import GeneratorError


class Git:
    """git, run in the project (which may sit in a subfolder of the work tree); a failure is a GeneratorError."""

    def __init__(self, root: Path) -> None:
        self.root = root
        top = self.run("rev-parse", "--show-toplevel", what="the project is not in a git work tree").strip()
        self.prefix = root.resolve().relative_to(Path(top).resolve()).as_posix()
        self.prefix = "" if self.prefix == "." else self.prefix + "/"

    def run(self, *args: str, what: str) -> str:
        result = subprocess.run(["git", *args], cwd=self.root, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise GeneratorError(f"{what}: git {' '.join(args)}: {result.stderr.strip()}")
        return result.stdout

    def resolve(self, rev: str) -> str:
        return self.run("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", what=f"unknown revision {rev!r}").strip()

    def merge_base(self) -> tuple[str, str]:
        for main in ("main", "origin/main"):
            found = subprocess.run(["git", "rev-parse", "--verify", "--quiet", main], cwd=self.root, capture_output=True, check=False)
            if found.returncode == 0:
                return f"merge base with {main}", self.run("merge-base", "HEAD", main, what=f"no merge base with {main}").strip()
        raise GeneratorError("no branch `main` or `origin/main` to take the merge base with; pass --base REV")

    def tree(self, commit: str, directory: str) -> dict[str, str]:
        """Text of every file under `directory` (project-relative) at `commit`, by path relative to it."""
        listing = self.run("ls-tree", "-r", "-z", "--name-only", commit, "--", self.prefix + directory, what="cannot list the base tree")
        files = {}
        for path in filter(None, listing.split("\0")):
            files[path[len(self.prefix + directory) + 1 :]] = self.show(commit, path)
        return files

    def show(self, commit: str, path: str) -> str:
        return self.run("show", f"{commit}:{path}", what=f"cannot read {path} at {commit[:12]}")

    def file(self, commit: str, project_path: str) -> str | None:
        result = subprocess.run(["git", "show", f"{commit}:{self.prefix}{project_path}"], cwd=self.root, capture_output=True, text=True,
                                check=False)  # fmt: skip
        return result.stdout if result.returncode == 0 else None
