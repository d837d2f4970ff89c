"""The model table and limits (models.toml), and token usage and its price."""

from __future__ import annotations

import os
import tomllib
from dataclasses import MISSING, dataclass, fields
from pathlib import Path

from ..errors import GeneratorError

DEFAULT_CONFIG = Path(__file__).with_name("models.toml")
CONFIG_ENV = "TSGEN_AGENT_CONFIG"  # another table, e.g. for tests or a private price list


@dataclass(frozen=True)
class Price:
    """USD per million tokens."""

    input: float
    output: float
    cache_write: float
    cache_read: float

    def scaled(self, factor: float) -> Price:
        return Price(*(getattr(self, f.name) * factor for f in fields(Price)))


@dataclass(frozen=True)
class Limits:
    max_attempts: int
    max_tokens: int
    max_tokens_retry: int
    time_limit_s: float
    request_timeout_s: float
    sdk_max_retries: int  # HTTP requests the SDK may repeat before a stream starts
    stream_retries: int  # requests sent again after a stream broke
    stream_backoff_s: float
    # Message Batches (--batch); a table without these keys gets these values.
    batch_poll_s: float = 60.0  # between looks at a batch in progress
    batch_wait_s: float = 86400.0  # a batch still in progress this long after it was sent is canceled (the API expires it at 24 h)


@dataclass(frozen=True)
class AgentConfig:
    default_model: str
    limits: Limits
    prices: dict[str, Price]
    batch_price_factor: float = 0.5  # a Message Batch's tokens cost this fraction of the interactive price

    def price(self, model: str, batch: bool = False) -> Price:
        try:
            price = self.prices[model]
        except KeyError:
            known = ", ".join(sorted(self.prices))
            raise GeneratorError(f"unknown model {model!r}: add its prices to the model table (known: {known})") from None
        return price.scaled(self.batch_price_factor) if batch else price


def load_config(path: Path | None = None) -> AgentConfig:
    path = path or Path(os.environ.get(CONFIG_ENV, DEFAULT_CONFIG))
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        # Field types are strings here (postponed annotations): "int" or "float".
        limits = Limits(**{f.name: (int if f.type == "int" else float)(data["limits"][f.name])
                           for f in fields(Limits) if f.name in data["limits"] or f.default is MISSING})  # fmt: skip
        prices = {model: Price(**{f.name: float(row[f.name]) for f in fields(Price)}) for model, row in data["models"].items()}
        config = AgentConfig(str(data["default_model"]), limits, prices, float(data.get("batch_price_factor", AgentConfig.batch_price_factor)))
        if not 0 < config.batch_price_factor <= 1:
            raise ValueError(f"batch_price_factor must be in (0, 1], not {config.batch_price_factor}")
    except (OSError, tomllib.TOMLDecodeError, KeyError, TypeError, ValueError) as exc:
        raise GeneratorError(f"{path}: bad model table: {type(exc).__name__}: {exc}") from None
    config.price(config.default_model)
    return config


@dataclass(frozen=True)
class Usage:
    """Tokens of one or more responses, as the API bills them."""

    input: int = 0  # uncached input after the last cache breakpoint
    cache_write: int = 0
    cache_read: int = 0
    output: int = 0  # thinking included

    @staticmethod
    def from_api(usage: dict) -> Usage:
        return Usage(
            input=int(usage.get("input_tokens") or 0),
            cache_write=int(usage.get("cache_creation_input_tokens") or 0),
            cache_read=int(usage.get("cache_read_input_tokens") or 0),
            output=int(usage.get("output_tokens") or 0),
        )

    def __add__(self, other: Usage) -> Usage:
        return Usage(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(Usage)))

    @property
    def total(self) -> int:
        return self.input + self.cache_write + self.cache_read + self.output

    def cost(self, price: Price) -> float:
        return (self.input * price.input + self.cache_write * price.cache_write + self.cache_read * price.cache_read
                + self.output * price.output) / 1e6  # fmt: skip

    def as_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(Usage)}
