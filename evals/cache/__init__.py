"""The response cache: what a request is (its key), what a sample is, and where they are kept.

from evals.cache import Cache, ChatRequest
cache = Cache("lab/cache")                 # one SQLite file, one row per (request key, sample)
cache = Cache("postgresql+psycopg://me@db/lab")   # or one database for the whole lab
cache.info().samples, cache.clear(question="wish"), cache.copy_to("postgresql+psycopg://…")

See docs/design/cache.md.
"""

from evals.cache._backend import CacheStats
from evals.cache._batch_records import (
    ACTIVE_STATES,
    BatchItem,
    BatchLine,
    BatchRecord,
    BatchRecords,
    new_record_id,
)
from evals.cache._requests import (
    CACHE_VERSION,
    ChatRequest,
    RequestBatch,
    SampleResult,
    encode_text,
    message_json,
)
from evals.cache._samples import CachedLookup, CachedSamples
from evals.cache._store import DEFAULT_LEASE_SECONDS, Cache, CacheInfo, Claims, CopyResult

__all__ = [
    "ACTIVE_STATES",
    "CACHE_VERSION",
    "DEFAULT_LEASE_SECONDS",
    "BatchItem",
    "BatchLine",
    "BatchRecord",
    "BatchRecords",
    "Cache",
    "CacheInfo",
    "CacheStats",
    "CachedLookup",
    "CachedSamples",
    "ChatRequest",
    "Claims",
    "CopyResult",
    "RequestBatch",
    "SampleResult",
    "encode_text",
    "message_json",
    "new_record_id",
]
