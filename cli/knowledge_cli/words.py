"""`knowledge words audit --agent A [--dry-run]`: the words an agent learned from its traffic that the
rules of docs/contract.md ("Learned words") would not have learned, listed and taken out
(knowledge.operation.word_audit). `knowledge words propose --agent A [--dry-run]`: the model's words
for the agent's concepts that have none yet, queued as batched words jobs (knowledge.operation.model_words)."""

from __future__ import annotations

import argparse
import sys
from typing import Any, Callable

from knowledge.operation.word_audit import REASONS


def add_commands(commands: Any, slug: Callable[[str], Callable[[str], str]]) -> None:
    words = commands.add_parser("words", help="audit the words an agent learned from its customers' traffic")
    actions = words.add_subparsers(dest="action", required=True)
    audit = actions.add_parser(
        "audit", help="list the learned words the rules would not have learned (a name, another concept's word, "
                      "too few distinct customers) and take them out, one version per concept")
    audit.add_argument("--agent", required=True, type=slug("agent"))
    audit.add_argument("--tenant", default="default", type=slug("tenant"))
    audit.add_argument("--dry-run", action="store_true", help="list them; write nothing")
    audit.set_defaults(run=_audit)
    propose = actions.add_parser(
        "propose", help="ask the model for the customers' words of every concept that has no model word yet "
                        "(ten concepts to a call, within the tenant's daily model calls)")
    propose.add_argument("--agent", required=True, type=slug("agent"))
    propose.add_argument("--tenant", default="default", type=slug("tenant"))
    propose.add_argument("--dry-run", action="store_true", help="say what would be asked and what it costs; queue "
                                                                 "nothing")
    propose.set_defaults(run=_propose)


def _propose(args: argparse.Namespace) -> int:
    from knowledge import wiring
    from knowledge.store.concepts import ConceptStore
    from knowledge.store.config_cache import ConfigCache
    from shared.aws import client
    from shared.settings import Settings

    settings = Settings.from_env(require=() if args.dry_run else ("POLICY_REVIEW_QUEUE_URL",))
    config = ConfigCache(ConceptStore(client("s3"), settings.knowledge_bucket)).get(args.tenant, args.agent)
    why_not = ("it has no knowledge: block" if config is None
               else "its knowledge.yaml's learn_from leaves out model" if "model" not in config.learn_from
               else "no model is configured (the agent's model, or UTILITY_MODEL)"
               if not (config.model or settings.utility_model) else None)
    plan = wiring.words_backfill(settings)(args.tenant, args.agent, args.dry_run or why_not is not None)
    for i, call in enumerate(plan.calls, 1):
        print(f"call {i:>4}: {', '.join(call)}")
    where = f"{args.tenant}/{args.agent}"
    print(f"words propose: {plan.concepts} concept(s) of {where} without model words, {len(plan.calls)} model "
          f"call(s) ({plan.taught} taught already" + (f", {plan.unreadable} unreadable" if plan.unreadable else "")
          + ")" + (" (dry run: nothing queued)" if args.dry_run else f"; {plan.queued} queued" if why_not is None
                   else ""))
    if why_not is not None:
        print(f"nothing is asked for {where}: {why_not}", file=sys.stderr)
        return 0 if args.dry_run else 1
    return 0 if args.dry_run or plan.queued == plan.concepts else 1


def _customers(s3: Any, bucket: str, tenant: str, agent: str) -> Callable[[], dict[str, str]]:
    """Each session's customer, from Facts' customer index (key names only: no object read)."""
    from facts import layout
    from shared import awscall

    def read() -> dict[str, str]:
        prefix = f"{layout.facts_prefix(tenant, agent)}customers/"
        found: dict[str, str] = {}
        for page in awscall.pages(s3, "list_objects_v2", Bucket=bucket, Prefix=prefix):
            for item in page.get("Contents", []):
                customer, _, session = item["Key"][len(prefix):].partition("/")
                if customer and session:
                    found.setdefault(session, customer)
        return found

    return read


def _audit(args: argparse.Namespace) -> int:
    # The command line is an entry point, like a handler: it may wire Facts' customer index in.
    from knowledge.operation.word_audit import audit_words
    from knowledge.store.concepts import ConceptStore
    from knowledge.store.learning_ledger import WordLedger
    from shared.aws import client
    from shared.settings import Settings

    settings = Settings.from_env(require=("SESSIONS_BUCKET",))
    s3 = client("s3")
    store = ConceptStore(s3, settings.knowledge_bucket)
    ledger = WordLedger(s3, settings.sessions_bucket, settings.knowledge_bucket)
    audit = audit_words(store, ledger, args.tenant, args.agent, dry_run=args.dry_run,
                        customers=_customers(s3, settings.sessions_bucket, args.tenant, args.agent))
    verb = "would remove" if args.dry_run else "removed"
    for found in audit.out:
        print(f"{verb:<13} {found.concept:<48} {found.word!r:<24} {REASONS[found.reason]}")
    for name, word in audit.unchecked:
        print(f"{'kept':<13} {name:<48} {word!r:<24} not checked: its teachers are no longer in the ledger")
    for name in audit.contended:
        print(f"{name:<64} written meanwhile: run again", file=sys.stderr)
    if audit.stale:
        print(f"{'would delete' if args.dry_run else 'deleted'} the kept teachers of {len(audit.stale)} word(s) no "
              "longer on their concept")
    where = f"{args.tenant}/{args.agent}"
    print(f"words audit: {len(audit.out)} of {audit.checked} words learned from the traffic of {where} {verb}, "
          f"from {len(audit.concepts)} concept(s), none added to removed_words"
          + (" (dry run: nothing written)" if args.dry_run else ""))
    return 1 if audit.contended else 0
