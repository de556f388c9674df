"""`./run publish-studio` puts the Facts page beside the knowledge page, and Cognito calls it back
(the stack on moto: the `deployed` fixture of tests/e2e/test_publish_studio.py)."""

from __future__ import annotations

from helpers.paths import ROOT
from helpers.skips import skip_unless_present


# ------------------------------------------------------------------ the page is published and signs in to itself


@skip_unless_present({"the built pages (./run builds them with npm)": (ROOT / "studio_web/dist/facts.html").exists()})
def test_publish_puts_the_facts_page_beside_the_knowledge_page_and_cognito_calls_it_back(deployed):
    from knowledge_dev.publish import page_config, publish, stack_outputs
    from knowledge_dev.template import load_template

    clients, stack, distribution = deployed
    outputs = stack_outputs(clients["cloudformation"], stack)
    written = publish(clients["s3"], clients["cloudfront"], outputs, page_config(outputs))
    assert {"studio/facts", "studio/facts.js", "studio/facts.css"} <= set(written)
    page = clients["s3"].get_object(Bucket=outputs["StudioBucketName"], Key="studio/facts")
    assert page["ContentType"] == "text/html; charset=utf-8" and b'src="facts.js"' in page["Body"].read()
    client = load_template()["Resources"]["OperatorsUserPoolClient"]["Properties"]
    for urls in (client["CallbackURLs"], client["LogoutURLs"]):
        assert [url["Fn::If"][1]["Fn::Sub"].rsplit("/", 1)[1] for url in urls] == ["knowledge", "facts"]
