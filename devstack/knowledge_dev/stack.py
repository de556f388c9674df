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
import secrets
import shutil
import signal
import socket
import sys
import threading
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Optional, Sequence

from botocore.exceptions import BotoCoreError, ClientError

from .scripted_model import ScriptedModel, rules_responder
from .snapshot import BucketSnapshot
from .template import (
    ROOT,
    bucket_specs,
    create_buckets,
    create_queues,
    env_references,
    event_bus_ids,
    load_template,
    queue_specs,
)

DEFAULT_PORT = 4599
DEFAULT_STUDIO_PORT = 8080
# Lambda's Invoke API for RetrieveFunction and MemoryFunction (lambda_endpoint.py): moto's port - 1 by default.
DEFAULT_LAMBDA_PORT = DEFAULT_PORT - 1
SCRIPTED_MODEL = "openai:scripted-demo"
DEFAULT_DATA = ROOT / ".local" / "data"
STATE_FILE = Path(os.environ.get("KNOWLEDGE_LOCAL_STATE", ROOT / ".local" / "stack.json"))
DEV_TOKEN_FILE = STATE_FILE.parent / "dev-token"
DEMO_TENANT, DEMO_AGENT = "default", "store-support"
DEMO_CUSTOMER, DEMO_CONVERSATION = "cus_77120", "devstack/knowledge_dev/demo/conversa-cliente.jsonl"
DEFAULT_DISTILL_EVERY = 60.0  # seconds; the template's DistillSchedule defaults to 15 minutes
SNAPSHOT_EVERY = 60.0  # seconds between SnapshotFunction passes; the template's SnapshotSchedule: 5 minutes
FACTS_KEY_FILE = "facts-key"
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


def seed_demo(store) -> int:  # noqa: ANN001 - a knowledge.store.concepts.ConceptStore
    """Write the demo agent's knowledge.yaml, vocabulary.yaml and concepts; returns the number of concepts."""
    from knowledge.format.concept import parse

    demo = resources.files(__package__) / "demo"
    store.put_config(DEMO_TENANT, DEMO_AGENT, (demo / "knowledge.yaml").read_text(encoding="utf-8"),
                     actor="operator:demo")
    store.put_vocabulary(DEMO_TENANT, DEMO_AGENT, (demo / "vocabulary.yaml").read_text(encoding="utf-8"),
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
    model_port: int = 0
    studio_port: int = DEFAULT_STUDIO_PORT
    lambda_port: int = DEFAULT_LAMBDA_PORT
    demo: bool = True
    idle_minutes: Optional[float] = None  # the idle shortcut (None: each agent's distill.idle_hours)
    distill_every: float = DEFAULT_DISTILL_EVERY
    env: dict[str, str] = field(default_factory=dict)
    restored: int = 0
    seeded: int = 0

    def start(self) -> "LocalStack":
        for port, option in ((self.port, "--port / KNOWLEDGE_LOCAL_PORT"),
                             (self.model_port, "--model-port / KNOWLEDGE_LOCAL_MODEL_PORT"),
                             (self.studio_port, "--studio-port / KNOWLEDGE_LOCAL_STUDIO_PORT"),
                             (self.lambda_port, "--lambda-port / KNOWLEDGE_LOCAL_LAMBDA_PORT")):
            if port and not port_free(port):
                raise StackError(f"port {port} on 127.0.0.1 is in use: stop what runs there, "
                                 f"or choose another with {option}")
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

        endpoint = self.env["AWS_ENDPOINT_URL"]
        s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
        sqs = boto3.client("sqs", endpoint_url=endpoint, region_name="us-east-1")
        events = boto3.client("events", endpoint_url=endpoint, region_name="us-east-1")
        template = load_template()
        specs = bucket_specs(template)
        names = create_buckets(s3, specs)
        queue_urls = create_queues(sqs, queue_specs(template))
        buses = {}
        for logical_id in event_bus_ids(template):
            buses[logical_id] = f"local-{logical_id.lower()}"
            events.create_event_bus(Name=buses[logical_id])
        self.queue_urls = queue_urls
        for variable, logical_id in env_references(template).items():
            value = queue_urls.get(logical_id) or buses.get(logical_id)
            if value:
                self.env[variable] = value
        self.env.update(names)
        self.env.update(self._model_env())
        self.env["FACTS_KEY"] = self._facts_key()
        os.environ.update(self.env)

        self._snapshots = [BucketSnapshot(s3, names[spec.env_var], self.data / "s3" / spec.logical_id)
                           for spec in specs]
        self.restored = sum(snapshot.load() for snapshot in self._snapshots)
        if not self.restored and self.demo:
            from knowledge.store.concepts import ConceptStore

            self.seeded = seed_demo(ConceptStore(s3, names["KNOWLEDGE_BUCKET"]))
            self.save()
        self._pollers = self._start_pollers(sqs)
        self._start_distill_schedule()
        self._start_snapshot_schedule()
        self._start_studio()
        self._start_lambda_endpoint()
        return self

    def _start_lambda_endpoint(self) -> None:
        from .lambda_endpoint import direct_endpoint

        self.lambda_endpoint = direct_endpoint(self.lambda_port).start()
        # Not an AWS setting: where an engine's Lambda client points (endpoint_url) to reach this stack.
        self.env["KNOWLEDGE_LAMBDA_ENDPOINT"] = self.lambda_endpoint.url

    def _facts_key(self) -> str:
        """FACTS_KEY when the user sets one, else a random key made once per data folder: latches
        (dismissed tuples) must survive a restart, and --reset forgets both together. DEV ONLY:
        the deployed stack reads its key from the FactsKeySecret secret."""
        if os.environ.get("FACTS_KEY"):
            return os.environ["FACTS_KEY"]
        path = self.data / FACTS_KEY_FILE
        try:
            return path.read_text(encoding="ascii").strip()
        except FileNotFoundError:
            key = "dev-only-" + secrets.token_hex(32)
            path.touch(mode=0o600)
            path.write_text(key, encoding="ascii")
            return key

    def _start_distill_schedule(self) -> None:
        from .handlers import distill_handler, function_timeout_ms
        from .poller import Schedule

        distill = distill_handler(self.idle_minutes)
        self.distill_schedule = Schedule(distill.lambda_handler, "distill", self.distill_every,
                                         function_timeout_ms("distill"))
        self.distill_schedule.start()

    def _start_snapshot_schedule(self) -> None:
        from .handlers import function_timeout_ms, load_handler
        from .poller import Schedule

        snapshot = load_handler("snapshot")
        self.snapshot_schedule = Schedule(snapshot.lambda_handler, "snapshot", SNAPSHOT_EVERY,
                                          function_timeout_ms("snapshot"))
        self.snapshot_schedule.start()

    def _start_studio(self) -> None:
        from .handlers import load_handler
        from .poller import LambdaContext
        from .studio_server import LocalAuthorizer, StudioServer

        self.studio_url = f"http://127.0.0.1:{self.studio_port}"
        os.environ["STUDIO_ORIGIN"] = self.studio_url
        api, facts_api = load_handler("studio_api"), load_handler("facts_api")
        self.authorizer = LocalAuthorizer(issuer=f"{self.studio_url}/dev")
        self.studio = StudioServer(api.lambda_handler, self.authorizer, port=self.studio_port,
                                   context_factory=lambda: LambdaContext("studio_api"),
                                   facts_handler=facts_api.lambda_handler).start()
        self.dev_token = self.authorizer.token()
        DEV_TOKEN_FILE.parent.mkdir(parents=True, exist_ok=True)
        DEV_TOKEN_FILE.write_text(self.dev_token)

    def _model_env(self) -> dict[str, str]:
        """A real model when the user names one (UTILITY_MODEL), else the scripted model."""
        if os.environ.get("UTILITY_MODEL"):
            self.model = None
            return {name: os.environ[name] for name in ("UTILITY_MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY")
                    if os.environ.get(name)}
        script = json.loads((resources.files(__package__) / "demo" / "model_script.json").read_text("utf-8"))
        self.model = ScriptedModel(rules_responder(script["rules"]), port=self.model_port).start()
        return {"UTILITY_MODEL": SCRIPTED_MODEL, "OPENAI_BASE_URL": self.model.base_url, "OPENAI_API_KEY": ""}

    def _policy_review(self, load_handler):  # noqa: ANN001, ANN202 - knowledge_dev.handlers.load_handler
        """PolicyReviewFunction. With the scripted model, built without one: the script has no verdict for
        a policy review, so each pair waits for a human at once (`no_model`) instead of after every
        delivery the queue allows, which would fill the terminal with retries of an import's policies."""
        if self.model is None:
            return load_handler("policy_review")
        scripted = os.environ.pop("UTILITY_MODEL")
        try:
            return load_handler("policy_review")  # its service is built at import, from this environment
        finally:
            os.environ["UTILITY_MODEL"] = scripted

    def _start_pollers(self, sqs) -> list:  # noqa: ANN001 - a boto3 SQS client
        from .handlers import load_handler
        from .poller import Poller

        extract, consolidate = load_handler("extract"), load_handler("consolidate")
        policy_review = self._policy_review(load_handler)
        pollers = [Poller(sqs, self.queue_urls["TurnCompleteQueue"], extract.lambda_handler, "extract",
                          batch_size=5),
                   Poller(sqs, self.queue_urls["CandidatesQueue"], consolidate.lambda_handler, "consolidate",
                          batch_size=10),
                   Poller(sqs, self.queue_urls["PolicyReviewQueue"], policy_review.lambda_handler, "policy_review",
                          batch_size=5)]
        for poller in pollers:
            poller.start()
        return pollers

    def save(self, *, compact: bool = False) -> None:
        """Mirror what changed to the data folder; `compact`: the manifest written whole (on stop)."""
        for snapshot in self._snapshots:
            snapshot.save(compact=compact)

    def stop(self) -> None:
        if getattr(self, "studio", None):
            self.studio.stop()
        if getattr(self, "lambda_endpoint", None):
            self.lambda_endpoint.stop()
        threads = [*getattr(self, "_pollers", []), *filter(None, [getattr(self, "distill_schedule", None),
                                                                  getattr(self, "snapshot_schedule", None)])]
        for thread in threads:
            thread.stop()
        for thread in threads:
            thread.join(timeout=5)
        try:
            self.save(compact=True)
        finally:
            if getattr(self, "model", None):
                self.model.stop()
            self._server.stop()


def _banner(stack: LocalStack) -> str:
    where = (f"restored {stack.restored} object versions from {stack.data}" if stack.restored
             else f"seeded the demo agent '{DEMO_AGENT}' with {stack.seeded} concepts")
    idle = ("the agent's distill.idle_hours (6 h for the demo)" if stack.idle_minutes is None
            else f"{stack.idle_minutes:g} minute(s) of silence (--idle-minutes: a local shortcut)")
    model = (f"SCRIPTED model on {stack.model.base_url} (fixtures in devstack/knowledge_dev/demo/model_script.json, "
             f"not a real model; set UTILITY_MODEL and OPENAI_BASE_URL to use one)" if stack.model
             else f"model {stack.env['UTILITY_MODEL']}")
    return f"""
Knowledge is running locally (moto on {stack.env['AWS_ENDPOINT_URL']}); {where}.
Write path: TurnCompleteQueue -> ExtractFunction -> CandidatesQueue -> ConsolidateFunction (the real
handlers), with the {model}.
Facts: DistillFunction (the real handler) runs every {stack.distill_every:g} s; a session is due after
{idle}. FACTS_KEY is a dev-only key kept in {stack.data / FACTS_KEY_FILE}.

What you can do now, in another terminal:
  ./run knowledge send-turn events/turn.json       # the logs below show what was accepted, rejected, redacted
  ./run knowledge history --agent {DEMO_AGENT} cep-sudeste-cd-campinas   # then: created, confirmed, ...
  ./run knowledge retrieve --agent {DEMO_AGENT} "Moro em Campinas, o frete é grátis?"   # the <knowledge> block
  ./run knowledge load --agent {DEMO_AGENT} cep-sudeste-cd-campinas                     # load_knowledge
  ./run knowledge backfill --agent {DEMO_AGENT} --since 2026-11-01T00:00:00Z --dry-run
  ./run knowledge export --agent {DEMO_AGENT} --out ./export
  ./run knowledge export --agent {DEMO_AGENT} --out ./export --format graphml

Facts (distilled customer memory; nothing reaches a customer's memory without an approval):
  ./run knowledge send-conversation {DEMO_CONVERSATION}   # customer {DEMO_CUSTOMER}, stamped now
  ./run knowledge distill-now                      # a pass at once, every session taken as idle
  ./run knowledge facts list --agent {DEMO_AGENT}           # the proposals, with their ids
  ./run knowledge facts approve --agent {DEMO_AGENT} ID     # or: reject ID [--reason ...], dismiss ID
  ./run knowledge memory --customer {DEMO_CUSTOMER}               # the engine's read (MemoryFunction)

The engine's direct calls (Lambda's Invoke API, the real RetrieveFunction and MemoryFunction handlers):
  endpoint_url={stack.env.get('KNOWLEDGE_LAMBDA_ENDPOINT')} for boto3's Lambda client or knowledge_client
  (README, "An engine's integration in ten lines"); the TurnCompleteQueue is {stack.env.get('TURN_QUEUE_URL')}

Studio (the pages, and the real StudioApiFunction and FactsApiFunction behind a local JWT authorizer):
  {stack.studio_url}/studio/knowledge?agent={DEMO_AGENT}     (then "Sign in": a local stand-in for Cognito)
  {stack.studio_url}/studio/facts?agent={DEMO_AGENT}         (the proposals to approve, reject or dismiss)
  curl -H "Authorization: Bearer $(cat {DEV_TOKEN_FILE})" \\
       {stack.studio_url}/api/tenants/{DEMO_TENANT}/agents/{DEMO_AGENT}/concepts
  (dev sign-in: operator 'dev-operator' in tenant '{DEMO_TENANT}'; the token lasts 12 hours)

Data lives in {stack.data} (wipe it with ./run local --reset). Ctrl-C stops the stack.
"""


def _float_env(name: str) -> Optional[float]:
    value = os.environ.get(name)
    try:
        return float(value) if value else None
    except ValueError:
        raise SystemExit(f"knowledge-local: {name} must be a number") from None


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="knowledge-local", description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=int(os.environ.get("KNOWLEDGE_LOCAL_PORT", DEFAULT_PORT)))
    parser.add_argument("--model-port", type=int,
                        default=int(os.environ.get("KNOWLEDGE_LOCAL_MODEL_PORT", 0)) or None,
                        help="port of the scripted model (default: the --port value + 1)")
    parser.add_argument("--studio-port", type=int,
                        default=int(os.environ.get("KNOWLEDGE_LOCAL_STUDIO_PORT", DEFAULT_STUDIO_PORT)))
    parser.add_argument("--lambda-port", type=int,
                        default=int(os.environ.get("KNOWLEDGE_LOCAL_LAMBDA_PORT", 0)) or None,
                        help="port of Lambda's Invoke API for RetrieveFunction and MemoryFunction "
                             "(default: the --port value - 1)")
    parser.add_argument("--data", type=Path, default=Path(os.environ.get("KNOWLEDGE_LOCAL_DATA", DEFAULT_DATA)))
    parser.add_argument("--reset", action="store_true", help="wipe the data folder and start from the demo")
    parser.add_argument("--idle-minutes", type=float,
                        default=_float_env("KNOWLEDGE_LOCAL_IDLE_MINUTES"),
                        help="a session is due for distillation after this many quiet minutes (0: at once) "
                             "instead of its agent's distill.idle_hours; a local shortcut")
    parser.add_argument("--distill-every", type=float,
                        default=_float_env("KNOWLEDGE_LOCAL_DISTILL_EVERY") or DEFAULT_DISTILL_EVERY,
                        help=f"seconds between distillation passes (default {DEFAULT_DISTILL_EVERY:g})")
    parser.add_argument("--metrics", action="store_true", default=bool(os.environ.get("KNOWLEDGE_LOCAL_METRICS")),
                        help="echo each function's EMF metrics (JSON) in this terminal, as CloudWatch would get "
                             "them (default: off; the log lines alone)")
    parser.add_argument("--save-every", type=float, default=2.0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if not args.metrics:  # a terminal for a person: the metrics are counted, not printed
        os.environ["POWERTOOLS_METRICS_DISABLED"] = "true"
    if args.idle_minutes is not None and args.idle_minutes < 0:
        parser.error("--idle-minutes must be 0 or more")
    if args.distill_every <= 0:
        parser.error("--distill-every must be more than 0")
    if args.reset and args.data.exists():
        shutil.rmtree(args.data)
    try:
        stack = LocalStack(port=args.port, data=args.data, model_port=args.model_port or args.port + 1,
                           studio_port=args.studio_port, lambda_port=args.lambda_port or args.port - 1,
                           idle_minutes=args.idle_minutes,
                           distill_every=args.distill_every).start()
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
            try:
                stack.save()
            except (BotoCoreError, ClientError, OSError) as exc:
                # A save that fails (a busy moto, a full disk) is retried at the next tick; the
                # stack keeps serving. The final save below still raises.
                print(f"knowledge-local: saving the data failed ({type(exc).__name__}); retrying", flush=True)
    finally:
        stack.stop()
        STATE_FILE.unlink(missing_ok=True)
        print("knowledge-local: stopped; data saved", flush=True)
    # A scheduled pass still running (SnapshotFunction's at 5,000 concepts, DistillFunction's) would
    # retry S3 until its own deadline, minutes away, and the interpreter waits for its threads: the
    # data is saved, so the process ends now.
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
