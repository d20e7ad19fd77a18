"""The response cache: what a request is (its key), what a sample is, and where they are kept.

from evals.cache import Cache, ChatRequest
cache = Cache("lab/cache")                 # one SQLite file, one row per (request key, sample)
cache = Cache("postgresql+psycopg://me@db/lab")   # or one database for the whole lab
cache.info().samples, cache.clear(question="wish"), cache.copy_to("postgresql+psycopg://…")

`ChatRequest.cache_key` is the canonical hash of everything that decides an answer; samples
are told apart by their index. A process claims what it is about to buy, so that others wait
for it instead of buying it too, and `cache.batches` records the batches in flight for its
samples. See docs/design/cache.md.
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
from evals.cache._claims import Claims
from evals.cache._copying import CopyResult
from evals.cache._requests import (
    CACHE_VERSION,
    ChatRequest,
    RequestBatch,
    SampleResult,
    encode_text,
    message_json,
)
from evals.cache._samples import CachedLookup, CachedSamples
from evals.cache._store import DEFAULT_LEASE_SECONDS, Cache, CacheInfo

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
