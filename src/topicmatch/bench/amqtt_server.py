"""One amqtt broker on 127.0.0.1, stock or on topicmatch, in a process of its own.

``python -m topicmatch.bench.amqtt_server --broker topicmatch --port 18830`` serves until it is
sent SIGTERM or SIGINT, then shuts the broker down and exits. It prints ``ready`` on stdout once
the listener accepts connections. Both brokers get the same configuration: one TCP listener on
127.0.0.1, anonymous clients, no other plugin (amqtt's default packet and event loggers and its
``$SYS`` publisher would cost both the same and measure nothing of the routing), logging at
WARNING. The experiment of :mod:`topicmatch.bench.amqtt_routing` starts it and stops it by PID.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
from typing import Any

__all__ = ["BROKERS", "config", "main"]

#: the two brokers compared: name -> "module:class"
BROKERS = {"stock": "amqtt.broker:Broker", "topicmatch": "topicmatch.compat.amqtt:Broker"}


def config(port: int) -> dict[str, Any]:
    """The configuration both brokers run with (module docstring)."""
    return {
        "listeners": {"default": {"type": "tcp", "bind": f"127.0.0.1:{port}"}},
        "plugins": {"amqtt.plugins.authentication.AnonymousAuthPlugin": {"allow_anonymous": True}},
    }


async def _serve(broker_name: str, port: int) -> None:
    module_name, class_name = BROKERS[broker_name].split(":")
    module = __import__(module_name, fromlist=[class_name])
    broker = getattr(module, class_name)(config(port))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await broker.start()
    print("ready", flush=True)
    await stop.wait()
    await broker.shutdown()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--broker", choices=sorted(BROKERS), required=True, help="which broker to run")
    parser.add_argument("--port", type=int, required=True, help="the TCP port on 127.0.0.1")
    options = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(_serve(options.broker, options.port))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
