-- cladelog schema version 5: an append as one server-side call (one round trip).
--
-- cladelog_append takes a batch whose canonical data and meta bytes the client encoded
-- (and the JSON strings of each stream, type and the batch's recorded_at, quoted by the
-- client's canonical encoder), and under the head lock: checks the idempotency key and
-- the expected stream versions, numbers the events, chains their hashes with sha256()
-- by the rule of docs/events.md, inserts them, extends the Merkle tree (store/tree.py:
-- leaf = SHA-256(0x00 || chain hash), node = SHA-256(0x01 || left || right), the
-- complete subtrees at every __STRIDE__th level stored: the store puts tree.STRIDE in
-- place of that number when it installs this function), records the batch's key, moves the head
-- and notifies followers. The client recomputes every hash from the same bodies and
-- compares (store/postgres.py); the tests hold the two to the same bytes.
--
-- status: 'ok' (appended), 'repeated' (the key was recorded with this digest: nothing
-- appended; first/last name that batch), 'key' (the key was recorded with another
-- digest), 'conflict' (conflict_stream is at conflict_actual, not at its expected
-- version), 'peaks' (the tree's peaks kept in the head row are not for this head: the
-- client computes them from the stored tree and calls again with p_peaks/p_peaks_for;
-- nothing was changed). Only 'ok' writes anything.
CREATE OR REPLACE FUNCTION cladelog_append(
    p_key TEXT,
    p_digest TEXT,
    p_recorded_at TEXT,
    p_recorded_at_json BYTEA,
    p_streams TEXT[],
    p_streams_json BYTEA[],
    p_types TEXT[],
    p_types_json BYTEA[],
    p_schema_versions INTEGER[],
    p_data BYTEA[],
    p_meta BYTEA[],
    p_expected_streams TEXT[],
    p_expected_versions BIGINT[],
    p_peaks BYTEA,
    p_peaks_for TEXT,
    OUT status TEXT,
    OUT head_position BIGINT,
    OUT head_hash TEXT,
    OUT first_position BIGINT,
    OUT last_position BIGINT,
    OUT hashes TEXT[],
    OUT versions BIGINT[],
    OUT conflict_stream TEXT,
    OUT conflict_actual BIGINT,
    OUT held_us BIGINT
) AS $$
DECLARE
    locked TIMESTAMPTZ;
    v_peaks BYTEA;
    v_for TEXT;
    v_digest TEXT;
    v_first BIGINT;
    v_last BIGINT;
    n INTEGER := cardinality(p_streams);
    k INTEGER;
    ver BIGINT;
    u_streams TEXT[] := '{}';
    u_before BIGINT[] := '{}';
    u_now BIGINT[] := '{}';
    i INTEGER;
    pos BIGINT;
    prev TEXT;
    prev_raw BYTEA;
    body BYTEA;
    prevs TEXT[];
    acc BYTEA;
    size BIGINT;
    lvl INTEGER;
    idx BIGINT;
    stack BYTEA;
    node_levels SMALLINT[] := '{}';
    node_idxs BIGINT[] := '{}';
    node_hashes BYTEA[] := '{}';
BEGIN
    SELECT h.position, h.hash, h.tree_peaks, h.tree_for
        INTO head_position, head_hash, v_peaks, v_for
        FROM cladelog_head h WHERE h.id = 1 FOR UPDATE;
    locked := clock_timestamp();
    SELECT b.digest, b.first_position, b.last_position INTO v_digest, v_first, v_last
        FROM batches b WHERE b.key = p_key;
    IF FOUND THEN
        status := CASE WHEN v_digest = p_digest THEN 'repeated' ELSE 'key' END;
        first_position := v_first;
        last_position := v_last;
        RETURN;
    END IF;
    IF v_for IS DISTINCT FROM head_hash OR v_peaks IS NULL THEN
        IF p_peaks_for IS NOT NULL AND p_peaks_for = head_hash THEN
            v_peaks := p_peaks;
        ELSE
            status := 'peaks';
            RETURN;
        END IF;
    END IF;
    IF length(v_peaks) <> 32 * bit_count(head_position::bit(64)) THEN
        RAISE EXCEPTION 'cladelog: a tree of size % has % peaks, not % bytes of them',
            head_position, bit_count(head_position::bit(64)), length(v_peaks);
    END IF;
    -- each stream's version before the batch (one index probe per stream; a batch is
    -- mostly runs of one stream, so the last one is tried first), the events' stream
    -- versions, and the expected versions (checked before anything is written)
    versions := array_fill(NULL::BIGINT, ARRAY[n]);
    FOR i IN 1..n LOOP
        IF k IS NULL OR u_streams[k] <> p_streams[i] THEN
            k := array_position(u_streams, p_streams[i]);
            IF k IS NULL THEN
                SELECT COALESCE(MAX(e.stream_version), 0) INTO ver
                    FROM events e WHERE e.stream = p_streams[i];
                u_streams := u_streams || p_streams[i];
                u_before := u_before || ver;
                u_now := u_now || ver;
                k := cardinality(u_streams);
            END IF;
        END IF;
        u_now[k] := u_now[k] + 1;
        versions[i] := u_now[k];
    END LOOP;
    FOR i IN 1..coalesce(cardinality(p_expected_streams), 0) LOOP
        k := array_position(u_streams, p_expected_streams[i]);
        IF k IS NULL THEN
            SELECT COALESCE(MAX(e.stream_version), 0) INTO ver
                FROM events e WHERE e.stream = p_expected_streams[i];
        ELSE
            ver := u_before[k];
        END IF;
        IF ver <> p_expected_versions[i] THEN
            versions := NULL;
            conflict_stream := p_expected_streams[i];
            conflict_actual := ver;
            status := 'conflict';
            RETURN;
        END IF;
    END LOOP;
    -- chain (docs/events.md) and grow the tree (store/tree.py's _grow), event by event
    hashes := array_fill(NULL::TEXT, ARRAY[n]);
    prevs := array_fill(NULL::TEXT, ARRAY[n]);
    pos := head_position;
    prev := head_hash;
    prev_raw := decode(prev, 'hex');
    size := head_position;
    stack := v_peaks;
    FOR i IN 1..n LOOP
        pos := pos + 1;
        body := '\x7b2264617461223a'::bytea || p_data[i]           -- {"data":
            || '\x2c226d657461223a'::bytea || p_meta[i]              -- ,"meta":
            || convert_to(',"position":' || pos || ',"prev_hash":"' || prev
                          || '","recorded_at":', 'UTF8')
            || p_recorded_at_json
            || convert_to(',"schema_version":' || p_schema_versions[i] || ',"stream":',
                          'UTF8')
            || p_streams_json[i]
            || convert_to(',"stream_version":' || versions[i] || ',"type":', 'UTF8')
            || p_types_json[i] || '\x7d'::bytea;                       -- }
        prevs[i] := prev;
        prev_raw := sha256(prev_raw || body);
        prev := encode(prev_raw, 'hex');
        hashes[i] := prev;
        acc := sha256('\x00'::bytea || prev_raw);
        IF size & 1 = 1 THEN
            lvl := 0;
            idx := size;
            WHILE idx & 1 = 1 LOOP
                acc := sha256('\x01'::bytea || substr(stack, length(stack) - 31, 32) || acc);
                stack := substr(stack, 1, length(stack) - 32);
                lvl := lvl + 1;
                idx := idx >> 1;
                IF lvl % __STRIDE__ = 0 THEN
                    node_levels := node_levels || lvl::SMALLINT;
                    node_idxs := node_idxs || idx;
                    node_hashes := node_hashes || acc;
                END IF;
            END LOOP;
        END IF;
        stack := stack || acc;
        size := size + 1;
    END LOOP;
    INSERT INTO events (position, stream, stream_version, type, schema_version,
                        recorded_at, data, meta, hash, prev_hash)
        SELECT head_position + t.k, t.s, t.v, t.ty, t.sv, p_recorded_at, t.d, t.m, t.h, t.p
        FROM unnest(p_streams, versions, p_types, p_schema_versions, p_data, p_meta,
                    hashes, prevs) WITH ORDINALITY AS t(s, v, ty, sv, d, m, h, p, k)
        ORDER BY t.k;
    IF cardinality(node_levels) > 0 THEN
        BEGIN
            INSERT INTO tree_nodes (level, idx, hash)
                SELECT * FROM unnest(node_levels, node_idxs, node_hashes);
        EXCEPTION WHEN unique_violation OR raise_exception THEN
            RAISE EXCEPTION USING ERRCODE = 'CLTRE',
                MESSAGE = format('%s', SQLERRM), DETAIL = head_position::TEXT;
        END;
    END IF;
    first_position := head_position + 1;
    last_position := pos;
    UPDATE cladelog_head SET position = pos, hash = prev, tree_peaks = stack, tree_for = prev
        WHERE id = 1;
    INSERT INTO batches (key, digest, first_position, last_position)
        VALUES (p_key, p_digest, first_position, pos);
    PERFORM pg_notify('cladelog_events', pos::TEXT);
    status := 'ok';
    held_us := (extract(epoch FROM clock_timestamp() - locked) * 1000000)::BIGINT;
END $$ LANGUAGE plpgsql;

-- cladelog schema version 8: the head lock is no longer held through the commit's WAL
-- flush, so that concurrent appends share their flushes (group commit), and nothing
-- leaves the store before it is durable. Schema version 9 changes when an append counts
-- as alone (below) and reports which way it committed (flush).
--
-- cladelog_append_durably is what a writer calls (CALL, outside any transaction block). It
-- runs cladelog_append in a transaction of its own and commits it in one of two ways:
--
-- * shared (any other case): the transaction commits without waiting for the flush, so
--   its events become visible and the head lock is released at once; then a second
--   transaction runs the barrier cladelog_durable() (below): nothing if the WAL is already
--   flushed past the commit (another writer's flush), else one WAL record, whose
--   synchronous commit, when the procedure returns, waits for the flush past it, hence
--   past the append's commit (the WAL is one sequence, and a crash keeps a prefix of it).
--   Writers waiting for their flushes at the same moment share one (group commit).
-- * alone: the transaction commits synchronously, holding the lock through the flush as
--   schema 7 did; the second transaction would only cost time. An append is alone when
--   it did not wait for the lock (at most cladelog.async_after_us, 100 us unless the
--   session sets it; an uncontended call measures about 30) and, since schema 9, when
--   no other append came between it and this session's previous one (the head it found
--   is the head that append left: cladelog.last_position, a session setting this
--   procedure keeps). Schema 8 looked at the wait only: with two or four writers, an
--   append that happened to find the lock free then held it through a flush that
--   queued behind the others' (380-620 us against 150 alone), and everyone waited.
--
-- Either way the call returns once the append is flushed, so an acknowledged append is
-- durable. A crash between an asynchronous commit and its flush loses the append and every
-- later append chained on it (their commit records come later in the WAL): the log after
-- recovery is a prefix of the log before it; the writer, unacknowledged, retries under its
-- idempotency key. A call that appended nothing (a repeated key names a batch that may
-- itself not be flushed yet, a conflict reports a version) runs the barrier too.
--
-- flush: 'alone' or 'shared' for an append, NULL when nothing was appended.
DROP PROCEDURE IF EXISTS cladelog_append_durably(  -- schema 8's, without flush
    TEXT, TEXT, TEXT, BYTEA, TEXT[], BYTEA[], TEXT[], BYTEA[], INTEGER[], BYTEA[], BYTEA[],
    TEXT[], BIGINT[], BYTEA, TEXT, TEXT, BIGINT, TEXT, BIGINT, BIGINT, TEXT[], BIGINT[], TEXT,
    BIGINT, BIGINT);
CREATE OR REPLACE PROCEDURE cladelog_append_durably(
    p_key TEXT, p_digest TEXT, p_recorded_at TEXT, p_recorded_at_json BYTEA,
    p_streams TEXT[], p_streams_json BYTEA[], p_types TEXT[], p_types_json BYTEA[],
    p_schema_versions INTEGER[], p_data BYTEA[], p_meta BYTEA[],
    p_expected_streams TEXT[], p_expected_versions BIGINT[], p_peaks BYTEA, p_peaks_for TEXT,
    INOUT status TEXT, INOUT head_position BIGINT, INOUT head_hash TEXT,
    INOUT first_position BIGINT, INOUT last_position BIGINT, INOUT hashes TEXT[],
    INOUT versions BIGINT[], INOUT conflict_stream TEXT, INOUT conflict_actual BIGINT,
    INOUT held_us BIGINT, INOUT flush TEXT
) AS $$
DECLARE
    started TIMESTAMPTZ := clock_timestamp();
    waited_us DOUBLE PRECISION;
BEGIN
    SELECT a.status, a.head_position, a.head_hash, a.first_position, a.last_position,
           a.hashes, a.versions, a.conflict_stream, a.conflict_actual, a.held_us
        INTO status, head_position, head_hash, first_position, last_position, hashes,
             versions, conflict_stream, conflict_actual, held_us
        FROM cladelog_append(p_key, p_digest, p_recorded_at, p_recorded_at_json, p_streams,
                             p_streams_json, p_types, p_types_json, p_schema_versions, p_data,
                             p_meta, p_expected_streams, p_expected_versions, p_peaks,
                             p_peaks_for) a;
    -- the call's time but the work under the lock: mostly the wait for the lock
    waited_us := extract(epoch FROM clock_timestamp() - started) * 1000000
                 - coalesce(held_us, 0);
    flush := NULL;
    IF status = 'ok' THEN
        flush := CASE WHEN waited_us <= coalesce(nullif(current_setting(
                                 'cladelog.async_after_us', true), '')::DOUBLE PRECISION, 100)
                           AND head_position = nullif(current_setting(
                                 'cladelog.last_position', true), '')::BIGINT
                      THEN 'alone' ELSE 'shared' END;
        -- this session's last append, for the next call (a session setting: it outlives
        -- the transaction, and a rolled-back one takes it back)
        PERFORM set_config('cladelog.last_position', last_position::TEXT, false);
    END IF;
    IF flush = 'alone' THEN
        COMMIT;  -- synchronous, flushed before the lock is released
    ELSE
        -- set_config rather than SET LOCAL: a utility statement costs ~15 us more
        PERFORM set_config('synchronous_commit', 'off', true);
        COMMIT;
        PERFORM cladelog_durable();
    END IF;
END $$ LANGUAGE plpgsql;

-- cladelog_durable() is every read's barrier. Called after the read took its snapshot (in
-- the read's own autocommit statement, or in a statement after it), it returns true at
-- once if the WAL is flushed as far as it is written; otherwise it writes one WAL record
-- in the caller's transaction, whose synchronous commit then waits for the flush past
-- that record: past every commit the snapshot shows. The statement's result is handed
-- out only after that commit, so nothing a crash could take back leaves the store. A
-- hot standby shows only WAL the primary flushed: nothing to wait for.
CREATE OR REPLACE FUNCTION cladelog_durable() RETURNS BOOLEAN AS $$
BEGIN
    IF NOT pg_is_in_recovery()
       AND pg_current_wal_flush_lsn() < pg_current_wal_insert_lsn() THEN
        PERFORM pg_logical_emit_message(true, 'cladelog', '');
    END IF;
    RETURN true;
END $$ LANGUAGE plpgsql VOLATILE;
