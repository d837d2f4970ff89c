"""Fixtures for the Claude proposer's offline tests: a checkout copy with two small ops whose specs
ask for Claude, a local Messages API, and the CLI run against it with a fake key."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.agent.fake_api import FakeMessagesAPI
from tests.helpers import run_tsgen, tsgen_env

# Never a real key: the tests assert that this string is written nowhere.
FAKE_KEY = "sk-ant-test-DO-NOT-LEAK-5f1c2e"

# Two cheap ops (two dtypes each, so each gate run takes seconds) that only Claude may write.
TEST_SPECS = {
    "twice": """func: twice(Tensor x, /) -> Tensor
family: pointwise
promotion: same
dtypes: [float32, int32]
expr: ts::ops::add(x, x)
reference: np.add(x, x)
doc: Twice each element (an op for the agent tests).
proposer: claude
""",
    "thrice": """func: thrice(Tensor x, /) -> Tensor
family: pointwise
promotion: same
dtypes: [float32, int32]
expr: ts::ops::add(ts::ops::add(x, x), x)
reference: np.add(np.add(x, x), x)
doc: Three times each element (an op for the agent tests).
proposer: claude
""",
}

# Small limits so that retries and timeouts take milliseconds to seconds.
CONFIG = """default_model = "claude-test-1"
[limits]
max_attempts = 4
max_tokens = 2000
max_tokens_retry = 8000
time_limit_s = 600
request_timeout_s = {timeout}
sdk_max_retries = {sdk_retries}
stream_retries = {stream_retries}
stream_backoff_s = 0.01
batch_poll_s = 0.05
batch_wait_s = {batch_wait}
[models.claude-test-1]
input = 3.0
output = 15.0
cache_write = 3.75
cache_read = 0.30
[models.claude-test-output-priced]  # input next to free: a request's cost is about its output's
input = 0.001
output = 15.0
cache_write = 0.001
cache_read = 0.0001
"""


def body(expr: str, count: str = "n") -> str:
    """A pointwise body for one input `x` that writes `expr` to elements [0, count)."""
    return f"""char* out = data[0];
const char* in_x = data[1];
for (int64_t i = 0; i < {count}; ++i) {{
  const T x = *reinterpret_cast<const T*>(in_x + i * strides[1]);
  *reinterpret_cast<T*>(out + i * strides[0]) = static_cast<T>({expr});
}}
"""


GOOD = {"twice": body("ts::ops::add(x, x)"), "thrice": body("ts::ops::add(ts::ops::add(x, x), x)")}
WRONG = body("ts::ops::multiply(x, x)")  # compiles, computes the wrong thing
FIRST_ONLY = body("ts::ops::add(x, x)", count="(n > 0 ? 1 : 0)")  # a cheat: right on one-element cases only
NO_COMPILE = body("ts::ops::add(x, y)")  # `y` is not declared


@pytest.fixture
def agent_checkout(checkout: Path, tmp_path: Path) -> Path:
    for name, text in TEST_SPECS.items():
        (checkout / "specs" / f"{name}.yaml").write_text(text, encoding="utf-8")
    return checkout


@pytest.fixture
def fake_api() -> Iterator[FakeMessagesAPI]:
    with FakeMessagesAPI() as api:
        yield api


def agent_env(root: Path, api: FakeMessagesAPI | None, tmp_path: Path, *, key: str | None = FAKE_KEY, timeout: float = 20,
              sdk_retries: int = 2, stream_retries: int = 2, batch_wait: float = 600) -> dict[str, str]:  # fmt: skip
    config = tmp_path / "models.toml"
    config.write_text(CONFIG.format(timeout=timeout, sdk_retries=sdk_retries, stream_retries=stream_retries, batch_wait=batch_wait),
                      encoding="utf-8")  # fmt: skip
    extra = {"TSGEN_AGENT_CONFIG": str(config)}
    if key is not None:
        extra["ANTHROPIC_API_KEY"] = key
    if api is not None:
        extra["ANTHROPIC_BASE_URL"] = api.base_url
    return tsgen_env(root, **extra)


@pytest.fixture
def claude(agent_checkout: Path, fake_api: FakeMessagesAPI, tmp_path: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    """claude(*args, **env options): `tsgen regen --proposer claude --no-build *args` against the fake API."""

    def run(*args: str, **options: object) -> subprocess.CompletedProcess[str]:
        env = agent_env(agent_checkout, fake_api, tmp_path, **options)  # type: ignore[arg-type]
        # CPU only: the fake API scripts one session per op (CUDA bodies are covered by the gate's own tests).
        return run_tsgen(agent_checkout, "regen", "--proposer", "claude", "--device", "cpu", "--no-build", *args, env=env)

    return run
