"""Zero-model capture (STRATAGATE_MODEL_ROUTE=none) of paraphrased turns, end to end over JSON-RPC in an in-process
sidecar: the sentences are judged by meaning (events/sentence_kind.py), so a fact, a change worded without "switch
to", a rule, a preference and a deadline plan become events of their kind, the change supersedes the fact it
replaces, and a request for information and encouragement become nothing — in English and in Chinese."""

from __future__ import annotations

import pytest

import test_zero_model_scenario as scenario
from support.sidecar import SidecarClient
from test_zero_model_scenario import converse, events

client = scenario.client  # the scenario's zero-model sidecar, one turn per block

EN = "project:storefront:0123456789abcdef"
ZH = "project:商城:fedcba9876543210"

CONVERSATIONS = {
    EN: [
        ("The storefront's payment provider is Braintree.", "fact"),
        ("Heads up: payments now go through Mollie instead of Braintree.", "change"),
        ("Remind me what the payment provider is.", None),
        ("Never deploy the storefront on a Friday.", "rule"),
        ("We'll keep going!", None),
        ("I'd like release notes written as short bullet lists.", "preference"),
        ("Let's have the checkout redesign live by the end of June.", "plan"),
    ],
    ZH: [
        ("商城的支付渠道是 Braintree。", "fact"),
        ("支付现在改走 Mollie 了。", "change"),
        ("提醒我一下支付渠道是哪个。", None),
        ("发布前必须跑完全部测试。", "rule"),
        ("我们继续加油！", None),
        ("更新说明我希望写成简短的要点。", "preference"),
        ("结账页改版六月底前上线。", "plan"),
    ],
}


@pytest.mark.parametrize("ns", [EN, ZH], ids=["en", "zh"])
async def test_paraphrased_turns_become_the_right_events_and_the_change_supersedes(client: SidecarClient, ns: str):
    said = CONVERSATIONS[ns]
    await converse(client, ns, [(text, "好的" if ns == ZH else "Sure, noted.") for text, _ in said])
    found = await events(client, ns)
    want = {text: kind for text, kind in said if kind is not None}
    assert set(found) == set(want), "the request and the encouragement are no events; the assistant adds none"
    for text, kind in want.items():
        assert kind in found[text]["tags"] and found[text]["type"] == ("decision" if kind == "rule" else kind)
    old, new = found[said[0][0]], found[said[1][0]]
    assert (old["status"], old["successor_id"]) == ("superseded", new["id"])
    assert new["status"] == "active"
    plan = found[said[6][0]]
    assert plan["temporal"]["status"] == "planned"
    assert found[said[5][0]]["scope"] == "user", "a first-person preference is about the user"
