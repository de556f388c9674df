"""Least privilege over a tenant's shared scope (tenants/{tenant}/shared/): each function may do there
only what its part of shared knowledge needs, and extraction writes nothing there."""

from __future__ import annotations

from helpers.operations import RESOURCES

SHARED = "${KnowledgeBucket.Arn}/tenants/"


def grants(function: str) -> dict[str, set[str]]:
    """Per action, the shared-scope resources the function's policies allow it."""
    out: dict[str, set[str]] = {}
    for policy in RESOURCES[function]["Properties"].get("Policies", []):
        for st in policy.get("Statement", []) if isinstance(policy, dict) else []:
            if st.get("Effect") != "Allow":
                continue
            resources = st["Resource"] if isinstance(st["Resource"], list) else [st["Resource"]]
            for r in resources:
                r = r.get("Fn::Sub", r) if isinstance(r, dict) else r
                if isinstance(r, str) and r.startswith(SHARED):
                    for action in st["Action"]:
                        out.setdefault(action, set()).add(r[len(SHARED):])
    return out


def test_each_function_may_do_in_the_shared_scope_only_what_it_needs():
    assert grants("RetrieveFunction") == {
        "s3:GetObject": {"*/shared/concepts/*", "*/shared/concepts-index/snapshot", "*/shared/deletions/*"},
        "s3:GetObjectVersion": {"*/shared/concepts/*"},  # knowledge_history, read only
        "s3:PutObject": {"*/shared/concepts-index/snapshot"}}
    assert grants("ExtractFunction") == {
        "s3:GetObject": {"*/shared/concepts/*", "*/shared/concepts-index/snapshot"}}
    # Consolidation reads a shared concept and never writes the shared scope: a claim about one waits
    # in the agent's own waiting pairs (shared knowledge serves only what a human approved).
    assert grants("ConsolidateFunction") == {"s3:GetObject": {"*/shared/concepts/*"}}
    assert grants("PurgeFunction") == {"s3:GetObject": {"*/shared/concepts/*"},
                                       "s3:GetObjectVersion": {"*/shared/concepts/*"},
                                       "s3:PutObject": {"*/shared/concepts/*"}, "s3:DeleteObjectVersion": {"*"}}
    # An operator's export and import of the shared concepts (`"shared": true`), and the scheduled
    # pass that keeps the shared snapshot current.
    assert grants("ExportFunction") == {"s3:GetObject": {"*/shared/concepts/*"}}
    assert grants("ImportFunction") == {action: {"*/shared/concepts/*"} for action in ("s3:GetObject", "s3:PutObject")}
    assert grants("SnapshotFunction") == {
        "s3:GetObject": {"*/shared/concepts/*", "*/shared/concepts-index/snapshot"},
        "s3:PutObject": {"*/shared/concepts-index/snapshot"}}
    # The studio reads and edits the shared concepts as an agent's (history, deletions, each operator's
    # review state, the snapshot a cold container starts from, the learned words page's summary beside it);
    # it has no knowledge.yaml to write there.
    assert grants("StudioApiFunction") == {
        "s3:GetObject": {"*/shared/*"}, "s3:GetObjectVersion": {"*/shared/*"},
        "s3:PutObject": {"*/shared/concepts/*", "*/shared/deletions/*", "*/shared/concepts-index/snapshot",
                         "*/shared/concepts-index/words", "*/shared/reviews/*"},
        "s3:DeleteObject": {"*/shared/concepts/*", "*/shared/deletions/*"}}
    # The repair moves a shared concept's unjudged claims to the waiting pairs of the agents they came
    # from, found by the versions that kept them there; it writes nothing else in the shared scope.
    assert grants("RepairFunction") == {action: {"*/shared/concepts/*"} for action in
                                        ("s3:GetObject", "s3:PutObject", "s3:GetObjectVersion")}
    # A shared policy's review reads it, and retires only agents' concepts.
    # An agent's policy is judged against the shared ones it recalls (read from their index's snapshot).
    # A shared concept is taught its model words once, there (written by compare-and-swap; deferred past the
    # tenant's budget beside it).
    assert grants("PolicyReviewFunction") == {
        "s3:GetObject": {"*/shared/concepts/*", "*/shared/concepts-index/snapshot"},
        "s3:PutObject": {"*/shared/concepts/*", "*/shared/words-pending/*"},
        "s3:GetObjectVersion": {"*/shared/concepts/*"}, "s3:DeleteObject": {"*/shared/words-pending/*"}}
    functions = [name for name, r in RESOURCES.items() if r["Type"] == "AWS::Serverless::Function"]
    allowed = {"RetrieveFunction", "ExtractFunction", "ConsolidateFunction", "PurgeFunction", "ExportFunction",
               "ImportFunction", "SnapshotFunction", "StudioApiFunction", "PolicyReviewFunction", "RepairFunction"}
    assert {name for name in functions if grants(name)} == allowed


def test_shared_concepts_keep_the_same_bounded_history_as_an_agents():
    rules = {rule["Id"]: rule for rule in
             RESOURCES["KnowledgeBucket"]["Properties"]["LifecycleConfiguration"]["Rules"]}
    agents, shared = rules["expire-old-concept-versions"], rules["expire-old-shared-concept-versions"]
    assert shared["Prefix"] == "tenants/" and shared["NoncurrentVersionExpiration"] == agents[
        "NoncurrentVersionExpiration"]
