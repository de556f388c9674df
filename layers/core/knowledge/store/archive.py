"""The turn archive in SESSIONS_BUCKET: every turn the engine sent, kept for backfill, evidence and
Facts (both loops read it), and the bucket's own retention."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Iterator, Optional

from botocore.exceptions import BotoCoreError, ClientError

from knowledge.format.evidence import STAMP
from knowledge.format.turn import Turn, parse_turn
from shared import awscall
from shared.errors import Conflict, InvalidName
from shared.names import check_slug, is_session_id


class TurnArchive:
    """Archived turns in SESSIONS_BUCKET, one object per turn, written once.

    Key: {tenant}/{agent}/turns/{completed_at as YYYYMMDDTHHMMSS.ffffffZ}/{session_id}/{turn_id}.json,
    so a listing is in time order and `since`/`until` need no reads.
    """

    def __init__(self, s3: Any, bucket: str):
        self._s3, self.bucket = s3, bucket

    @staticmethod
    def prefix(tenant: str, agent: str) -> str:
        return f"{check_slug('tenant', tenant)}/{check_slug('agent', agent)}/turns/"

    @staticmethod
    def stamp(moment: datetime) -> str:
        return moment.astimezone(timezone.utc).strftime(STAMP)

    def key(self, turn: Turn) -> str:
        return self.key_for(turn.tenant, turn.agent, turn.completed_at, turn.session_id, turn.turn_id)

    @classmethod
    def key_for(cls, tenant: str, agent: str, completed_at: datetime, session_id: str, turn_id: str) -> str:
        if not (is_session_id(session_id) and is_session_id(turn_id)):
            raise InvalidName("session_id", "letters, digits, '.', '_', ':', '-'; at most 128")
        return f"{cls.prefix(tenant, agent)}{cls.stamp(completed_at)}/{session_id}/{turn_id}.json"

    def put(self, turn: Turn) -> bool:
        """Archive a turn; False when it was already archived (a redelivery, or our own write
        whose answer was lost). Only a 412 means "there already": a 409 is retried."""
        return awscall.succeeds(Conflict, self._s3, "put_object", Bucket=self.bucket, Key=self.key(turn),
                                Body=turn.model_dump_json().encode(), ContentType="application/json",
                                IfNoneMatch="*")

    def keys(self, tenant: str, agent: str, since: datetime, until: Optional[datetime] = None,
             start_after: Optional[str] = None) -> Iterator[str]:
        """Archived turn keys with since <= completed_at < until, oldest first."""
        prefix = self.prefix(tenant, agent)
        first = max(prefix + self.stamp(since), start_after or "")
        last = prefix + self.stamp(until) if until else None
        for page in awscall.pages(self._s3, "list_objects_v2", Bucket=self.bucket, Prefix=prefix,
                                  StartAfter=_before(first)):
            for item in page.get("Contents", []):
                if item["Key"] <= (start_after or ""):
                    continue
                if last is not None and item["Key"] >= last:
                    return
                yield item["Key"]

    def get(self, key: str) -> Turn:
        body = awscall.call(self._s3, "get_object", Bucket=self.bucket, Key=key, read_body=True)["Body"]
        return parse_turn(body)


def _before(key: str) -> str:
    """A StartAfter value that still includes `key` itself."""
    return key[:-1] + chr(ord(key[-1]) - 1) if key else key


def expiry_days(s3: Any, bucket: str) -> Optional[int]:
    """The fewest days any enabled lifecycle rule of `bucket` keeps an object; None: nothing expires."""
    try:
        rules = s3.get_bucket_lifecycle_configuration(Bucket=bucket).get("Rules", [])
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") == "NoSuchLifecycleConfiguration":
            return None
        raise awscall.translate(error) from None
    except BotoCoreError as error:
        raise awscall.translate(error) from None
    days = [rule["Expiration"]["Days"] for rule in rules
            if rule.get("Status") == "Enabled" and isinstance(rule.get("Expiration", {}).get("Days"), int)]
    return min(days) if days else None
