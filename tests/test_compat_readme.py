"""README, "For broker developers": its snippets run. The command and the broker's YAML start
topicmatch's amqtt broker on 127.0.0.1 (a free port in place of 1883) and it behaves as the
comments say; the acl_file YAML loads the ACL plugin; the names in the prose exist. (Its
Python example runs with the README's other doctests, tests/test_readme.py.)"""

from __future__ import annotations

import asyncio
import re
import shlex
from pathlib import Path

from amqtt.client import MQTTClient
from amqtt.mqtt.constants import QOS_1
from amqtt.utils import read_yaml_config

from topicmatch.compat import amqtt as compat_amqtt

from .brokers.mqtt_clients import free_port
from .test_compat_amqtt import WAIT
from .test_compat_amqtt_options import FAILED, serve, stop

README = Path(__file__).resolve().parent.parent / "README.md"


def _section() -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index("\n## For broker developers\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else len(text)]


def _blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", _section(), re.DOTALL)


async def _as_the_comments_say(port: int) -> tuple[list[int], list[str]]:
    client, pub = MQTTClient(client_id="c"), MQTTClient(client_id="p")
    await client.connect(f"mqtt://127.0.0.1:{port}/")
    await pub.connect(f"mqtt://127.0.0.1:{port}/")
    try:
        asked = ["sensors/+", "sensors/#", "#", "$share/g/jobs/+"]
        codes = await client.subscribe([(f, QOS_1) for f in asked])
        await pub.publish("jobs/1", b"", qos=QOS_1)
        message = await client.deliver_message(timeout_duration=WAIT)
        return codes, [message.topic] if message is not None else []
    finally:
        await client.disconnect()
        await pub.disconnect()


def test_the_command_and_its_yaml_run_the_broker(tmp_path: Path) -> None:
    (command,) = _blocks("sh")
    broker_yaml = _blocks("yaml")[0]
    assert "bind: 127.0.0.1:1883" in broker_yaml
    port = free_port()
    arguments = shlex.split(command)
    assert arguments[:3] == ["python", "-m", "topicmatch.compat.amqtt"]
    config = tmp_path / arguments[arguments.index("-c") + 1]
    config.write_text(broker_yaml.replace("127.0.0.1:1883", f"127.0.0.1:{port}"))
    process = serve(config, port)
    try:
        codes, got = asyncio.run(asyncio.wait_for(_as_the_comments_say(port), WAIT * 3))
    finally:
        stop(process)
    # sensors/+ allowed; sensors/# not covered by the ACL; '#' costly; a shared job delivered
    assert codes == [1, FAILED, FAILED, 1]
    assert got == ["jobs/1"]


def test_the_acl_file_yaml_loads_the_plugin(tmp_path: Path) -> None:
    fragment_file = tmp_path / "fragment.yaml"
    fragment_file.write_text(_blocks("yaml")[1])
    fragment = read_yaml_config(fragment_file)  # as amqtt's command reads its configuration
    ((name, options),) = fragment.items()
    acl = tmp_path / "acl"
    acl.write_text("pattern readwrite devices/%c/#\n")
    options["acl_file"] = str(acl)

    async def loaded() -> object:
        broker = compat_amqtt.Broker(
            {
                "listeners": {"default": {"type": "tcp", "bind": f"127.0.0.1:{free_port()}"}},
                "plugins": {name: options},
            }
        )
        return broker.plugins_manager.get_plugin(name.rsplit(".", 1)[1])

    plugin = asyncio.run(loaded())
    assert isinstance(plugin, compat_amqtt.TopicACLPlugin)


def test_the_names_in_the_prose_exist() -> None:
    section = _section()
    for name in re.findall(r"topicmatch\.compat\.amqtt\.(\w+)", section):
        assert hasattr(compat_amqtt, name), name
    assert "`Broker.add_subscriptions(filters, session)`" in section
    assert callable(compat_amqtt.Broker.add_subscriptions)
    for path in re.findall(r"`(tests/[\w/]+\.py)`", section):
        assert (README.parent / path).exists(), path
