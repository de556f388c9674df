"""`./run local` as a user runs it: a real process, buckets from the template, data kept across restarts."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import boto3
import pytest
from helpers.paths import DEMO, ROOT

from knowledge.store.concepts import ConceptStore
from knowledge_dev.local_aws import free_port

READY = "Ctrl-C stops the stack"


class Stack:
    def __init__(self, tmp_path: Path):
        self.port, self.model_port, self.studio_port = free_port(), free_port(), free_port()
        self.lambda_port = free_port()
        self.data = tmp_path / "data"
        self.env = {**os.environ, "KNOWLEDGE_LOCAL_STATE": str(tmp_path / "stack.json"),
                    "PYTHONUNBUFFERED": "1"}
        for key in ("AWS_ENDPOINT_URL", "KNOWLEDGE_BUCKET", "SESSIONS_BUCKET", "UTILITY_MODEL", "OPENAI_BASE_URL"):
            self.env.pop(key, None)
        self.process = None
        self.output = ""

    def start(self, *extra: str) -> str:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "knowledge_dev.stack", "--port", str(self.port), "--data", str(self.data),
             "--model-port", str(self.model_port), "--studio-port", str(self.studio_port),
             "--lambda-port", str(self.lambda_port), "--save-every", "0.2", *extra],
            cwd=ROOT, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        deadline = time.monotonic() + 60
        self.output = ""
        while READY not in self.output:
            line = self.process.stdout.readline()
            if not line and self.process.poll() is not None:
                raise AssertionError(f"the stack exited early:\n{self.output}")
            self.output += line
            assert time.monotonic() < deadline, self.output
        banner = self.output
        # Keep reading: a stack whose pipe fills (the schedule logs every pass) would block.
        self._reader = threading.Thread(target=self._read, args=(self.process,), daemon=True)
        self._reader.start()
        return banner

    def _read(self, process) -> None:
        for line in process.stdout:
            self.output += line

    def stop(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        return self._ended()

    def kill(self) -> int:
        """SIGKILL: the stack saves nothing more."""
        self.process.kill()
        return self._ended()

    def _ended(self) -> int:
        code = self.process.wait(timeout=30)
        self._reader.join(timeout=10)
        self.process.stdout.close()
        return code

    def run_cli(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "knowledge_dev.client", *args], cwd=ROOT, env=self.env,
                              capture_output=True, text=True, timeout=60)

    def client(self, service):
        return boto3.client(service, endpoint_url=f"http://127.0.0.1:{self.port}", region_name="us-east-1",
                            aws_access_key_id="local", aws_secret_access_key="local")

    def s3(self):
        return self.client("s3")


@pytest.fixture
def stack(tmp_path):
    running = Stack(tmp_path)
    yield running
    if running.process and running.process.poll() is None:
        running.process.kill()
        running.process.wait()


def test_a_fresh_stack_seeds_the_demo_and_export_works(stack, tmp_path):
    banner = stack.start()
    assert "seeded the demo agent 'store-support'" in banner
    result = stack.run_cli("export", "--agent", "store-support", "--out", str(tmp_path / "export"))
    assert result.returncode == 0, result.stderr
    for path in DEMO.glob("*.md"):
        assert (tmp_path / "export" / path.name).read_bytes() == path.read_bytes()
    assert stack.stop() == 0


def test_buckets_follow_the_template(stack):
    stack.start()
    s3 = stack.s3()
    assert s3.get_bucket_versioning(Bucket="local-knowledge-bucket")["Status"] == "Enabled"
    assert "Status" not in s3.get_bucket_versioning(Bucket="local-sessions-bucket")
    rules = s3.get_bucket_lifecycle_configuration(Bucket="local-sessions-bucket")["Rules"]
    assert rules[0]["Expiration"]["Days"] == 90  # RetentionDays' default in template.yaml
    stack.stop()


def test_data_and_history_survive_a_restart(stack):
    stack.start()
    store = ConceptStore(stack.s3(), "local-knowledge-bucket")
    current = store.get("default", "store-support", "troca-em-30-dias")
    edited = current.concept.replace(description="Trocas em até 30 dias; o envio da primeira é por nossa conta.")
    store.replace("default", "store-support", edited, if_match=current.etag, actor="operator:ana", reason="edit")
    store.delete("default", "store-support", "objecao-frete-caro", actor="operator:ana")
    time.sleep(0.5)
    assert stack.stop() == 0

    banner = stack.start()
    assert "restored" in banner and "seeded" not in banner
    store = ConceptStore(stack.s3(), "local-knowledge-bucket")
    assert store.get("default", "store-support", "troca-em-30-dias").concept == edited
    assert [d.name for d in store.list_deleted("default", "store-support")] == ["objecao-frete-caro"]
    history = store.versions("default", "store-support", "troca-em-30-dias")
    assert [(v.actor, v.reason) for v in history] == [("operator:ana", "edit"), ("operator:demo", "created")]
    deleted = store.versions("default", "store-support", "objecao-frete-caro")
    assert [(v.actor, v.reason) for v in deleted] == [("operator:ana", "delete"), ("engine", "created")]
    stack.stop()

    stack.start("--reset")
    assert "seeded" in stack.output
    stack.stop()


def test_what_was_written_survives_a_stack_killed_between_two_full_saves(stack):
    from helpers.concepts import make_concept

    stack.start()
    store = ConceptStore(stack.s3(), "local-knowledge-bucket")
    for i in range(5):
        store.create("default", "store-support", make_concept(f"frete-regiao-{i}", description=f"Região {i}."),
                     actor="engine")
    current = store.get("default", "store-support", "troca-em-30-dias")
    edited = current.concept.replace(description="Trocas em até 30 dias; o envio da primeira é por nossa conta.")
    store.replace("default", "store-support", edited, if_match=current.etag, actor="operator:ana", reason="edit")
    time.sleep(1.5)  # a few saves (--save-every 0.2): each appends what changed
    mirror = stack.data / "s3" / "KnowledgeBucket"
    assert len((mirror / "changes.jsonl").read_text().splitlines()) >= 6 + 6  # the writes and their journal entries
    stack.kill()  # no final save: only the manifest and the changes after it are on disk

    assert "restored" in stack.start()
    store = ConceptStore(stack.s3(), "local-knowledge-bucket")
    assert {f"frete-regiao-{i}" for i in range(5)} <= {item.name for item in store.list("default", "store-support")}
    assert store.get("default", "store-support", "troca-em-30-dias").concept == edited
    history = store.versions("default", "store-support", "troca-em-30-dias")
    assert [(v.actor, v.reason) for v in history] == [("operator:ana", "edit"), ("operator:demo", "created")]
    assert not (mirror / "changes.jsonl").exists()  # folded into the manifest on start
    stack.stop()


def test_a_port_in_use_is_a_clear_error(stack):
    stack.start()
    second = subprocess.run(
        [sys.executable, "-m", "knowledge_dev.stack", "--port", str(stack.port), "--data", str(stack.data)],
        cwd=ROOT, env=stack.env, capture_output=True, text=True, timeout=60)
    assert second.returncode == 1 and f"port {stack.port} on 127.0.0.1 is in use" in second.stderr
    stack.stop()


def test_the_cli_says_when_the_stack_is_not_running(stack):
    result = stack.run_cli("export", "--agent", "store-support", "--out", "x")
    assert result.returncode == 1 and "./run local" in result.stderr


def test_a_sent_turn_is_extracted_by_the_real_handler_with_the_scripted_model(stack):
    banner = stack.start()
    assert "SCRIPTED model" in banner
    result = stack.run_cli("send-turn", "events/turn.json")
    assert result.returncode == 0 and "sent turn turn_0004 of session sess_demo_01" in result.stdout
    s3 = stack.s3()
    deadline = time.monotonic() + 20
    archived = {"Prefix": "default/store-support/turns/", "Bucket": "local-sessions-bucket"}
    while time.monotonic() < deadline and s3.list_objects_v2(**archived).get("KeyCount", 0) == 0:
        time.sleep(0.2)
    [key] = [o["Key"] for o in s3.list_objects_v2(**archived)["Contents"]]
    # Stamped now by send-turn (the file's fixed date would put it outside save_knowledge's window).
    stamp = key.split("/")[3]
    assert key.endswith("/sess_demo_01/turn_0004.json") and stamp[:8] == time.strftime("%Y%m%d", time.gmtime())
    store = ConceptStore(s3, "local-knowledge-bucket")
    while time.monotonic() < deadline and store.find("default", "store-support", "despacho-no-mesmo-dia") is None:
        time.sleep(0.2)
    created = store.get("default", "store-support", "despacho-no-mesmo-dia").concept
    assert "[email]" in created.body and created.sources == ("sess_demo_01",)
    while time.monotonic() < deadline and len(store.versions("default", "store-support", "cep-sudeste-cd-campinas")) < 2:
        time.sleep(0.2)
    history = stack.run_cli("history", "--agent", "store-support", "cep-sudeste-cd-campinas")
    reasons = [line.split()[2] for line in history.stdout.splitlines()]
    assert reasons == ["merged", "created"], history.stdout
    # The tour's save, against its own demo session, followed to its outcome.
    saved = stack.run_cli("save", "events/save-knowledge.json")
    assert saved.returncode == 0, saved.stderr
    save_id = json.loads(saved.stdout)["save_id"]
    while True:
        followed = stack.run_cli("save-status", "--agent", "store-support", save_id)
        status = json.loads(followed.stdout)["status"]
        if status != "queued" or time.monotonic() > deadline + 20:
            break
        time.sleep(0.5)
    assert status == "created", followed.stdout
    stack.stop()
    assert '"message":"turn processed"' in stack.output and '"sent":2' in stack.output
    assert '"outcome":"created"' in stack.output and '"outcome":"merged"' in stack.output
    # Each record's line names its concept; no EMF blob unless asked (--metrics).
    assert '"concept":"despacho-no-mesmo-dia"' in stack.output and '"_aws"' not in stack.output
    assert "ana.souza" not in stack.output


def test_knowledge_retrieve_and_load_answer_from_the_real_handler_on_the_stack(stack):
    stack.start()
    found = stack.run_cli("retrieve", "--agent", "store-support", "Moro em Campinas, o frete é grátis?")
    assert found.returncode == 0, found.stderr
    assert found.stdout.startswith('<knowledge>\n  <concept name="frete-gratis-acima-199"')  # the policy first
    assert 'load_knowledge("name")` FIRST' in found.stdout
    assert "cep-sudeste-cd-campinas" in found.stdout.split("</knowledge>")[1]  # the ranked list
    small_talk = stack.run_cli("retrieve", "--agent", "store-support", "oi, tudo bem?")
    assert small_talk.returncode == 0 and small_talk.stdout.strip() == "(nothing relevant: the block is empty)"
    loaded = stack.run_cli("load", "--agent", "store-support", "troca-em-30-dias")
    assert loaded.returncode == 0 and loaded.stdout == (DEMO / "troca-em-30-dias.md").read_text()
    missing = stack.run_cli("load", "--agent", "store-support", "nao-existe")
    assert missing.returncode == 1 and '"code": "not_found"' in missing.stdout
    stack.stop()


def test_sending_an_invalid_turn_is_refused_before_it_reaches_the_queue(stack, tmp_path):
    stack.start()
    bad = tmp_path / "bad.json"
    bad.write_text('{"tenant": "default"}')
    result = stack.run_cli("send-turn", str(bad))
    assert result.returncode == 1 and "agent: Field required" in result.stderr
    stack.stop()


def test_the_studio_api_answers_behind_the_local_authorizer(stack, tmp_path):
    import urllib.error
    import urllib.request

    banner = stack.start()
    assert f"http://127.0.0.1:{stack.studio_port}/api/tenants/default/agents/store-support/concepts" in banner
    token = (tmp_path / "dev-token").read_text()
    url = f"http://127.0.0.1:{stack.studio_port}/api/tenants/default/agents/store-support/concepts?status=conflict"
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        assert [c["name"] for c in json.loads(answer.read())["concepts"]] == ["prazo-reembolso-pix"]
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(url, timeout=10)
    assert refused.value.code == 401
    stack.stop()


# ------------------------------------------------------------------ Facts on the local stack

CONVERSATION = "devstack/knowledge_dev/demo/conversa-cliente.jsonl"
CUSTOMER, SESSION = "cus_77120", "sess_demo_facts_01"


def wait_for_turns(stack, count: int, timeout: float = 30) -> None:
    """Until ExtractFunction (behind the turn queue) has recorded `count` turns of the demo session."""
    from facts.sessions import SessionStates

    states = SessionStates(stack.s3(), "local-sessions-bucket")
    deadline = time.monotonic() + timeout
    while True:
        stored = states.get("default", "store-support", SESSION)
        if stored is not None and len(stored.state.turns) >= count:
            return
        assert time.monotonic() < deadline, f"the session has {len(stored.state.turns) if stored else 0} turns"
        time.sleep(0.2)


def proposals(stack) -> dict[str, tuple[str, str]]:
    """name -> (id prefix, status), from `knowledge facts list`."""
    listed = stack.run_cli("facts", "list", "--agent", "store-support")
    assert listed.returncode == 0, (listed.stderr, stack.output[-3000:])
    found = {}
    for line in listed.stdout.splitlines():
        if line.startswith("(no proposals)"):
            continue
        prefix, status, customer, name = line.split()[:4]
        assert customer == CUSTOMER
        found[name] = (prefix, status)
    return found


def distill_now(stack) -> dict:
    result = stack.run_cli("distill-now")
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout)


def send_follow_up(stack, tmp_path, turn_id: str, text: str) -> None:
    from datetime import datetime, timezone

    turn = tmp_path / f"{turn_id}.json"
    turn.write_text(json.dumps({
        "tenant": "default", "agent": "store-support", "session_id": SESSION, "turn_id": turn_id,
        "customer_id": CUSTOMER, "completed_at": datetime.now(timezone.utc).isoformat(),
        "messages": [{"role": "user", "content": text},
                     {"role": "assistant", "content": "Que bom! Qualquer coisa é só chamar por aqui."}]}))
    sent = stack.run_cli("send-turn", str(turn))
    assert sent.returncode == 0, sent.stderr


def facts_page_api(stack, tmp_path, path: str) -> dict:
    """The Facts page's API on the local studio server, with the dev operator's token."""
    import urllib.request

    url = f"http://127.0.0.1:{stack.studio_port}/api/tenants/default/agents/store-support/facts/{path}"
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {(tmp_path / 'dev-token').read_text()}"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read())


def test_the_demo_customer_conversation_is_distilled_reviewed_and_lands_in_the_memory_the_engine_reads(
        stack, tmp_path):
    banner = stack.start("--distill-every", "0.5")
    assert "FACTS_KEY is a dev-only key" in banner and "distill-now" in banner
    sent = stack.run_cli("send-conversation", CONVERSATION)
    assert sent.returncode == 0, sent.stderr
    assert sent.stdout.count(f"customer {CUSTOMER}") == 3
    wait_for_turns(stack, 3)
    time.sleep(1.5)  # scheduled passes run meanwhile, but the demo agent waits 6 idle hours
    assert proposals(stack) == {}

    first = distill_now(stack)  # the shortcut: every session taken as idle
    assert (first["scanned"], first["distilled"], first["proposed"]) == (1, 1, 4)
    assert first["rejected"] == {"forbidden_key": 1, "evidence_out_of_range": 1}  # another customer; index 12 of 6
    page = facts_page_api(stack, tmp_path, "proposals?state=pending")  # what the Facts page shows
    assert page["counts"]["pending"] == 4 and {p["scope"] for p in page["proposals"]} == {f"default:{CUSTOMER}"}
    [payment] = [p for p in page["proposals"] if p["name"] == "pagamento_preferido"]
    assert [(e["turn_id"], e["message"], e["status"]) for e in payment["evidence"]] == [("turn_0003", 0, "available")]
    assert "vou pagar no pix" in payment["evidence"][0]["excerpt"]  # read from the archived turn now
    listed = proposals(stack)
    assert {name: status for name, (_, status) in listed.items()} == {
        "orcamento_sofa": "pending", "pagamento_preferido": "pending", "janela_entrega": "pending",
        "animais_de_estimacao": "pending"}

    empty = json.loads(stack.run_cli("memory", "--customer", CUSTOMER, "--json").stdout)
    assert empty["facts"] == [] and empty["block"] == ""  # proposed is not applied

    approved = stack.run_cli("facts", "approve", "--agent", "store-support", listed["pagamento_preferido"][0])
    assert approved.returncode == 0 and "approved" in approved.stdout, approved.stderr
    dismissed = stack.run_cli("facts", "dismiss", "--agent", "store-support", listed["animais_de_estimacao"][0])
    assert dismissed.returncode == 0 and "dismissed" in dismissed.stdout, dismissed.stderr

    read = stack.run_cli("memory", "--customer", CUSTOMER, "--json")
    memory = json.loads(read.stdout)
    assert [(f["name"], f["value"], f["origin"]) for f in memory["facts"]] == [
        ("pagamento_preferido", "Pix; cartão só em último caso", f"distilled:{SESSION}")]
    assert memory["block"] == ('<memory>\n  <fact name="pagamento_preferido">Pix; cartão só em último caso</fact>\n'
                               '</memory>')
    cell = facts_page_api(stack, tmp_path, f"customers/{CUSTOMER}/memory")  # the operator's view of the same cell
    assert [(f["name"], f["origin"]) for f in cell["facts"]] == [("pagamento_preferido", f"distilled:{SESSION}")]

    # The customer writes again: the session comes due again and is distilled again, whole.
    send_follow_up(stack, tmp_path, "turn_0004", "chegou hoje, obrigada!! o sofa ficou lindo")
    wait_for_turns(stack, 4)
    again = distill_now(stack)
    assert (again["distilled"], again["proposed"]) == (1, 0)
    assert again["filtered"] == {"latched": 1, "already_applied": 1, "duplicate": 2}
    assert proposals(stack)["animais_de_estimacao"][1] == "dismissed"
    assert stack.stop() == 0

    # The dismissal outlives a restart: the dev key is kept with the data.
    stack.start("--distill-every", "3600")
    send_follow_up(stack, tmp_path, "turn_0005", "ah, esqueci: da pra mandar a nota fiscal por email?")
    wait_for_turns(stack, 5)
    after_restart = distill_now(stack)
    assert after_restart["filtered"]["latched"] == 1 and after_restart["proposed"] == 0

    # LGPD: forgetting the customer leaves nothing of them in either bucket, in any version.
    forgot = stack.run_cli("forget-customer", "--tenant", "default", "--customer", CUSTOMER)
    assert forgot.returncode == 0, forgot.stdout + forgot.stderr
    assert json.loads(stack.run_cli("memory", "--customer", CUSTOMER, "--json").stdout)["facts"] == []
    assert proposals(stack) == {}
    s3 = stack.s3()
    for bucket in ("local-knowledge-bucket", "local-sessions-bucket"):
        versions = s3.list_object_versions(Bucket=bucket)
        keys = [v["Key"] for v in versions.get("Versions", []) + versions.get("DeleteMarkers", [])]
        assert not [key for key in keys if CUSTOMER in key or SESSION in key], bucket
    assert stack.stop() == 0
    for value in ("cartão só em último caso", "R$ 2.500", "2 gatos", "sofa ficou lindo"):
        assert value not in stack.output  # the stack's logs, events and metrics carry no value


def test_with_the_idle_shortcut_the_schedule_distils_the_conversation_on_its_own(stack):
    stack.start("--idle-minutes", "0", "--distill-every", "1")
    assert stack.run_cli("send-conversation", CONVERSATION).returncode == 0
    deadline = time.monotonic() + 30
    while True:
        # While the schedule is writing proposals, moto now and then answers the listing's reads
        # with errors past the retry budget (503 busy); that is a wait, not the answer under test.
        listed = stack.run_cli("facts", "list", "--agent", "store-support")
        if listed.returncode == 0 and len(proposals(stack)) >= 4:
            break
        assert time.monotonic() < deadline, (listed.stderr, stack.output[-2000:])
        time.sleep(0.5)
    assert {status for _, status in proposals(stack).values()} == {"pending"}
    assert stack.stop() == 0


def test_the_local_idle_shortcut_refuses_a_negative_wait(stack):
    refused = subprocess.run(
        [sys.executable, "-m", "knowledge_dev.stack", "--port", str(stack.port), "--data", str(stack.data),
         "--idle-minutes", "-5"], cwd=ROOT, env=stack.env, capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2 and "--idle-minutes must be 0 or more" in refused.stderr


def test_the_tours_import_and_turn_print_at_most_40_log_lines(stack):
    banner = stack.start()
    start = len(banner.splitlines())
    imported = stack.run_cli("import", "--agent", "store-support", "tests/data/imports/faq-loja.csv")
    assert imported.returncode == 1 and "created 18" in imported.stdout  # its 4 bad rows refused by line
    assert stack.run_cli("send-turn", "events/turn.json").returncode == 0
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and (stack.output.count('"message":"policy review done"') < 18
                                           or stack.output.count('"message":"sighting consolidated"') < 2):
        time.sleep(0.5)
    time.sleep(3)  # a retry would show here
    stack.stop()
    scheduled = ('"message":"distill pass"', '"message":"snapshot pass"', "knowledge-local:")
    lines = [line for line in stack.output.splitlines()[start:] if line and not any(s in line for s in scheduled)]
    assert stack.output.count('"message":"policy review done"') == 18
    assert len(lines) <= 40, "\n".join(line[:160] for line in lines)
    assert '"_aws"' not in stack.output  # no EMF blob unless --metrics
