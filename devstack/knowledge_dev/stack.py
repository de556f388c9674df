"""`./run local`: the whole loop on this machine, on the embedded default.

moto's server on 127.0.0.1 stands in for AWS; the buckets are created from
template.yaml; a demo agent is seeded on first start; data is mirrored to a folder
so it survives a restart.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import signal
import socket
import sys
import threading
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Optional, Sequence

from .snapshot import BucketSnapshot
from .template import ROOT, bucket_specs, create_buckets

DEFAULT_PORT = 4599
DEFAULT_DATA = ROOT / ".local" / "data"
STATE_FILE = Path(os.environ.get("KNOWLEDGE_LOCAL_STATE", ROOT / ".local" / "stack.json"))
DEMO_TENANT, DEMO_AGENT = "default", "store-support"
LOCAL_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "local",
    "AWS_SECRET_ACCESS_KEY": "local",
    "AWS_DEFAULT_REGION": "us-east-1",
}


class StackError(Exception):
    """Something the user can fix: a port in use, a data folder we cannot write."""


def port_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        # As the server itself will: connections of a stack just stopped (TIME_WAIT) don't count.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def seed_demo(store) -> int:  # noqa: ANN001 - a knowledge.store.ConceptStore
    """Write the demo agent's knowledge.yaml and concepts; returns the number of concepts."""
    from knowledge.concept import parse

    demo = resources.files(__package__) / "demo"
    store.put_config(DEMO_TENANT, DEMO_AGENT, (demo / "knowledge.yaml").read_text(encoding="utf-8"),
                     actor="operator:demo")
    count = 0
    for item in sorted(demo.iterdir(), key=lambda p: p.name):
        if item.name.endswith(".md"):
            concept = parse(item.read_text(encoding="utf-8"))
            actor = "operator:demo" if concept.provenance == "policy" else "engine"
            store.create(DEMO_TENANT, DEMO_AGENT, concept, actor=actor)
            count += 1
    return count


@dataclass
class LocalStack:
    port: int = DEFAULT_PORT
    data: Path = DEFAULT_DATA
    demo: bool = True
    env: dict[str, str] = field(default_factory=dict)
    restored: int = 0
    seeded: int = 0

    def start(self) -> "LocalStack":
        if not port_free(self.port):
            raise StackError(f"port {self.port} on 127.0.0.1 is in use: stop what runs there, "
                             f"or choose another with --port / KNOWLEDGE_LOCAL_PORT")
        try:
            self.data.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StackError(f"cannot create the data folder {self.data}: {exc.strerror}") from None
        from moto.server import ThreadedMotoServer

        logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no access log per request

        self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=self.port, verbose=False)
        self._server.start()
        self.env = {**LOCAL_CREDENTIALS, "AWS_ENDPOINT_URL": f"http://127.0.0.1:{self.port}"}
        os.environ.update(self.env)

        import boto3

        s3 = boto3.client("s3", endpoint_url=self.env["AWS_ENDPOINT_URL"], region_name="us-east-1")
        specs = bucket_specs()
        names = create_buckets(s3, specs)
        self.env.update(names)
        os.environ.update(names)
        self._snapshots = [BucketSnapshot(s3, names[spec.env_var], self.data / "s3" / spec.logical_id)
                           for spec in specs]
        self.restored = sum(snapshot.load() for snapshot in self._snapshots)
        if not self.restored and self.demo:
            from knowledge.store import ConceptStore

            self.seeded = seed_demo(ConceptStore(s3, names["KNOWLEDGE_BUCKET"]))
            self.save()
        return self

    def save(self) -> None:
        for snapshot in self._snapshots:
            snapshot.save()

    def stop(self) -> None:
        try:
            self.save()
        finally:
            self._server.stop()


def _banner(stack: LocalStack) -> str:
    where = (f"restored {stack.restored} object versions from {stack.data}" if stack.restored
             else f"seeded the demo agent '{DEMO_AGENT}' with {stack.seeded} concepts")
    return f"""
Knowledge is running locally (moto's S3 on {stack.env['AWS_ENDPOINT_URL']}); {where}.

What you can do now, in another terminal:
  ./run knowledge export --agent {DEMO_AGENT} --out ./export
  ./run knowledge export --agent {DEMO_AGENT} --out ./export --format graphml

Data lives in {stack.data} (wipe it with ./run local --reset). Ctrl-C stops the stack.
"""


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="knowledge-local", description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=int(os.environ.get("KNOWLEDGE_LOCAL_PORT", DEFAULT_PORT)))
    parser.add_argument("--data", type=Path, default=Path(os.environ.get("KNOWLEDGE_LOCAL_DATA", DEFAULT_DATA)))
    parser.add_argument("--reset", action="store_true", help="wipe the data folder and start from the demo")
    parser.add_argument("--save-every", type=float, default=2.0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.reset and args.data.exists():
        shutil.rmtree(args.data)
    try:
        stack = LocalStack(port=args.port, data=args.data).start()
    except StackError as exc:
        print(f"knowledge-local: {exc}", file=sys.stderr)
        return 1
    STATE_FILE.parent.mkdir(parents=True, exist_ok=True)
    STATE_FILE.write_text(json.dumps({"pid": os.getpid(), "env": stack.env}, indent=1))
    print(_banner(stack), flush=True)

    stopping = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stopping.set())
    try:
        while not stopping.wait(args.save_every):
            stack.save()
    finally:
        stack.stop()
        STATE_FILE.unlink(missing_ok=True)
        print("knowledge-local: stopped; data saved", flush=True)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
