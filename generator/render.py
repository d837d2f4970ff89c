"""The Jinja environment: StrictUndefined, no autoescape, templates from templates/."""

from __future__ import annotations

from pathlib import Path

import jinja2


class Renderer:
    def __init__(self, template_dir: Path) -> None:
        self.template_dir = template_dir
        self.env = jinja2.Environment(
            loader=jinja2.FileSystemLoader(str(template_dir)),
            undefined=jinja2.StrictUndefined,
            keep_trailing_newline=True,
            autoescape=False,  # noqa: S701 - we render C++ and CMake, not HTML
        )

    def render(self, template: str, **context: object) -> str:
        return self.env.get_template(template).render(**context)

    def header(self, sources: list[str], comment: str = "//") -> str:
        return self.render("header.j2", sources=sources, comment=comment).rstrip("\n")

    def source(self, template: str) -> str:
        """A template's text, for hashing."""
        return (self.template_dir / template).read_text(encoding="utf-8")
