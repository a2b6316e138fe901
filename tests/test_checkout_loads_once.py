"""A command reads upstream.toml once and passes what it read on (checkout.Project.loaded)."""

from __future__ import annotations

import types

import pytest

from verl_patches import checkout as checkout_module


@pytest.mark.parametrize(
    "command", [("status",), ("table", "--all"), ("check", "--no-apply", "--no-upstream-checks")], ids=" ".join
)
def test_a_command_parses_upstream_toml_once(checkout, monkeypatch, command):
    parsed = []
    real = checkout_module.tomllib

    def loads(text):
        parsed.append(text)
        return real.loads(text)

    counting = types.SimpleNamespace(loads=loads, TOMLDecodeError=real.TOMLDecodeError)
    monkeypatch.setattr(checkout_module, "tomllib", counting)
    assert checkout.cli(*command) == 0
    assert len(parsed) == 1
