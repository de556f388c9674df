"""The tool definitions to hand a model (name, description, input_schema), as the service publishes them
(schemas/tools.json; a test keeps the two equal). The engine fills in tenant, agent and session_id."""

from __future__ import annotations

from typing import Any

TOOLS: list[dict[str, Any]] = [
    {
        "name": "load_knowledge",
        "description": "Load the full text of one concept listed in the <knowledge> block. Call it FIRST, before any other lookup, when the customer's question needs more than the summary.",
        "input_schema": {
            "type": "object",
            "properties": {
                "name": {
                    "type": "string",
                    "description": "the concept's name, as in the block",
                    "pattern": "^[a-z0-9]+(-[a-z0-9]+)*$",
                    "maxLength": 64,
                }
            },
            "required": ["name"],
            "additionalProperties": False,
        },
    },
    {
        "name": "search_knowledge",
        "description": "Search what this store has learned, when the customer's question changed or the <knowledge> block does not cover it. Answers the best matches' summaries; call load_knowledge for one's full text.",
        "input_schema": {
            "type": "object",
            "properties": {
                "query": {
                    "maxLength": 8000,
                    "minLength": 1,
                    "type": "string",
                    "description": "what to look for, in the customer's words",
                },
                "limit": {
                    "maximum": 50,
                    "minimum": 1,
                    "type": "integer",
                    "description": "how many matches at most (1 to 50; 10)",
                },
            },
            "required": ["query"],
            "additionalProperties": False,
        },
    },
    {
        "name": "save_knowledge",
        "description": "Save an insight this conversation showed, so future conversations know it. Quote the evidence verbatim from the conversation (what the store said; only an objection may quote the customer). It is learned as an observation, never as policy, and an operator can review it.",
        "input_schema": {
            "type": "object",
            "properties": {
                "name": {
                    "maxLength": 200,
                    "minLength": 1,
                    "type": "string",
                    "description": "a short slug naming the insight (lowercase words and hyphens)",
                },
                "description": {
                    "maxLength": 300,
                    "minLength": 1,
                    "type": "string",
                    "description": "one line saying what is true",
                },
                "type": {
                    "enum": ["fact", "entity", "procedure", "policy", "objection"],
                    "type": "string",
                    "description": "fact, entity, procedure, policy (what the store says it does) or objection (what customers say)",
                },
                "body": {
                    "maxLength": 16384,
                    "minLength": 1,
                    "type": "string",
                    "description": "the insight in a few sentences",
                },
                "evidence": {
                    "maxLength": 1000,
                    "minLength": 1,
                    "type": "string",
                    "description": "a verbatim quote from the conversation that shows it",
                },
            },
            "required": ["name", "description", "type", "body", "evidence"],
            "additionalProperties": False,
        },
    },
]
