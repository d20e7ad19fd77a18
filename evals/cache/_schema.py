"""The cache's tables, in SQL both SQLite and PostgreSQL take (`{p}` is the table prefix, `?`
a placeholder: see `CacheBackend.sql`)."""

SCHEMA_VERSION = 7
"""An older cache is brought up to date when first opened."""
SCHEMA = """
CREATE TABLE IF NOT EXISTS {p}samples (
    request_key TEXT NOT NULL,
    sample_ix INTEGER NOT NULL,
    model TEXT NOT NULL,
    question TEXT NOT NULL,
    content TEXT,
    logprobs TEXT,
    finish_reason TEXT,
    prompt_tokens DOUBLE PRECISION NOT NULL,
    completion_tokens DOUBLE PRECISION NOT NULL,
    created DOUBLE PRECISION NOT NULL,
    reasoning_tokens DOUBLE PRECISION,
    PRIMARY KEY (request_key, sample_ix)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS {p}samples_by_question ON {p}samples (question, model);
CREATE TABLE IF NOT EXISTS {p}errors (
    request_key TEXT NOT NULL,
    sample_ix INTEGER NOT NULL,
    model TEXT NOT NULL,
    question TEXT NOT NULL,
    kind TEXT NOT NULL,
    message TEXT NOT NULL,
    created DOUBLE PRECISION NOT NULL
);
CREATE INDEX IF NOT EXISTS {p}errors_by_request ON {p}errors (request_key, sample_ix);
CREATE TABLE IF NOT EXISTS {p}meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
DROP TABLE IF EXISTS {p}packs;
DROP TABLE IF EXISTS {p}frames;
CREATE TABLE IF NOT EXISTS {p}claims (
    request_key TEXT NOT NULL,
    sample_ix INTEGER NOT NULL,
    owner TEXT NOT NULL,
    expires DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (request_key, sample_ix)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS {p}claims_by_owner ON {p}claims (owner)
"""
BATCH_SCHEMA = """
CREATE TABLE IF NOT EXISTS {p}batch_records (
    id TEXT PRIMARY KEY,
    endpoint_id TEXT NOT NULL,
    base_url TEXT NOT NULL,
    model TEXT NOT NULL,
    label TEXT NOT NULL,
    state TEXT NOT NULL,
    owner TEXT NOT NULL,
    lease_until DOUBLE PRECISION NOT NULL,
    file_id TEXT,
    batch_id TEXT,
    status TEXT,
    requests INTEGER NOT NULL,
    samples INTEGER NOT NULL,
    tokens BIGINT NOT NULL,
    created DOUBLE PRECISION NOT NULL,
    updated DOUBLE PRECISION NOT NULL,
    message TEXT
);
CREATE INDEX IF NOT EXISTS {p}batch_records_by_state ON {p}batch_records (state, created);
CREATE TABLE IF NOT EXISTS {p}batch_items (
    request_key TEXT NOT NULL,
    sample_ix INTEGER NOT NULL,
    record_id TEXT NOT NULL,
    custom_id TEXT NOT NULL,
    logprobs INTEGER NOT NULL,
    PRIMARY KEY (request_key, sample_ix)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS {p}batch_items_by_record ON {p}batch_items (record_id, custom_id)
"""
"""The batch records' tables (see `_batch_records`), made when they are first used."""

SAMPLE_COLUMNS = (
    "request_key",
    "sample_ix",
    "model",
    "question",
    "content",
    "logprobs",
    "finish_reason",
    "prompt_tokens",
    "completion_tokens",
    "created",
    "reasoning_tokens",
)
ERROR_COLUMNS = ("request_key", "sample_ix", "model", "question", "kind", "message", "created")
SAMPLE_FIELDS = (
    "content, logprobs, finish_reason, prompt_tokens, completion_tokens, reasoning_tokens"
)
"""The columns of a `SampleResult`, in its order."""
COPIED_TABLES = {
    "samples": (SAMPLE_COLUMNS, ("request_key", "sample_ix")),
    "errors": (ERROR_COLUMNS, ("request_key", "sample_ix", "created")),
}
"""The tables a copy carries: their columns, and the key they are exported in order of."""
INSERTS = {
    "samples": f"INSERT INTO {{p}}samples ({', '.join(SAMPLE_COLUMNS)}) VALUES "
    f"({', '.join('?' * len(SAMPLE_COLUMNS))}) ON CONFLICT DO NOTHING",
    "errors": "INSERT INTO {p}errors SELECT ?, ?, ?, ?, ?, ?, ? WHERE NOT EXISTS (SELECT 1 "
    "FROM {p}errors WHERE request_key = ? AND sample_ix = ? AND created = ? AND message = ?)",
}
"""Statements inserting rows copied from another cache, skipping those already here."""
