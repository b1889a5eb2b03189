-- nestjs-db-locks: the PostgreSQL schema as LOCK_MIGRATIONS leave it.
-- Generated from a migrated database by `npm run schema:update`; test/integration/lock-schema-snapshot.spec.ts
-- fails when it differs from what the migrations create. Read it; never run it (run the migrations).

CREATE SEQUENCE locking_job_action_id_seq AS bigint MINVALUE 1 MAXVALUE 9223372036854775807 NO CYCLE;

CREATE SEQUENCE locking_stamp_seq AS bigint MINVALUE 1 MAXVALUE 9007199254740991 NO CYCLE;

CREATE SEQUENCE locking_waiter_seq AS bigint MINVALUE 1 MAXVALUE 9223372036854775807 NO CYCLE;

CREATE TABLE locking (
  lock_name character varying(200) NOT NULL,
  mode character(1) NOT NULL,
  app_id character varying(200) NOT NULL,
  stamp bigint NOT NULL,
  created timestamp with time zone NOT NULL DEFAULT now(),
  CONSTRAINT locking_pk PRIMARY KEY (lock_name, mode, stamp)
);
ALTER TABLE locking SET (autovacuum_vacuum_scale_factor=0, autovacuum_vacuum_threshold=1000, autovacuum_vacuum_cost_delay=0);
CREATE INDEX locking_stamp_idx ON public.locking USING btree (stamp);

CREATE TABLE locking_instances (
  app_id character varying(200) NOT NULL,
  instance character varying(200) NOT NULL,
  process_key character varying(300),
  claimed timestamp with time zone NOT NULL DEFAULT now(),
  CONSTRAINT locking_instances_pkey PRIMARY KEY (app_id)
);

CREATE TABLE locking_job (
  job character varying(200) NOT NULL,
  schedule character varying(200) NOT NULL,
  next_tick timestamp with time zone,
  last_succeeded timestamp with time zone,
  updated timestamp with time zone NOT NULL DEFAULT now(),
  CONSTRAINT locking_job_pk PRIMARY KEY (job)
);

CREATE TABLE locking_job_action (
  id bigint NOT NULL DEFAULT nextval('locking_job_action_id_seq'::regclass),
  job character varying(200) NOT NULL,
  action character varying(16) NOT NULL,
  actor character varying(200) NOT NULL,
  reason character varying(500) NOT NULL,
  acted_at timestamp with time zone NOT NULL,
  CONSTRAINT locking_job_action_pk PRIMARY KEY (id),
  CONSTRAINT locking_job_action_check CHECK (((action)::text = ANY ((ARRAY['pause'::character varying, 'resume'::character varying, 'run'::character varying])::text[])))
);
CREATE INDEX locking_job_action_job_idx ON public.locking_job_action USING btree (job, id);

CREATE TABLE locking_job_pause (
  job character varying(200) NOT NULL,
  actor character varying(200) NOT NULL,
  reason character varying(500) NOT NULL,
  paused_at timestamp with time zone NOT NULL,
  CONSTRAINT locking_job_pause_pk PRIMARY KEY (job)
);

CREATE TABLE locking_job_run (
  job character varying(200) NOT NULL,
  tick timestamp with time zone NOT NULL,
  outcome character varying(16) NOT NULL,
  app_id character varying(200),
  stamp bigint,
  started timestamp with time zone,
  duration_ms integer,
  error character varying(200),
  skipped_busy integer NOT NULL DEFAULT 0,
  skipped_elsewhere integer NOT NULL DEFAULT 0,
  claimable_until timestamp with time zone,
  manual boolean NOT NULL DEFAULT false,
  actor character varying(200),
  reason character varying(500),
  CONSTRAINT locking_job_run_pk PRIMARY KEY (job, tick),
  CONSTRAINT locking_job_run_outcome_check CHECK (((outcome)::text = ANY ((ARRAY['running'::character varying, 'succeeded'::character varying, 'failed'::character varying, 'lock-lost'::character varying, 'skipped'::character varying, 'paused'::character varying, 'requested'::character varying])::text[])))
);
CREATE INDEX locking_job_run_requested_idx ON public.locking_job_run USING btree (job) WHERE (manual AND ((outcome)::text = 'requested'::text));
CREATE INDEX locking_job_run_running_idx ON public.locking_job_run USING btree (job) WHERE ((outcome)::text = 'running'::text);
CREATE INDEX locking_job_run_tick_idx ON public.locking_job_run USING btree (tick);

CREATE TABLE locking_leaders (
  role character varying(200) NOT NULL,
  term bigint NOT NULL,
  stamp bigint NOT NULL,
  app_id character varying(200) NOT NULL,
  instance character varying(200) NOT NULL,
  elected timestamp with time zone NOT NULL,
  CONSTRAINT locking_leaders_pkey PRIMARY KEY (role),
  CONSTRAINT locking_leaders_term_ck CHECK ((term >= 1))
);

CREATE TABLE locking_log (
  stamp bigint NOT NULL,
  app_id character varying(200) NOT NULL,
  instance character varying(200) NOT NULL,
  lock_names character varying(200)[] NOT NULL,
  lock_modes character(1)[] NOT NULL,
  status character varying(16) NOT NULL,
  acquired timestamp with time zone NOT NULL DEFAULT now(),
  lease_expires timestamp with time zone NOT NULL,
  business_done timestamp with time zone,
  ended timestamp with time zone,
  version integer NOT NULL DEFAULT 1,
  ended_by character varying(200),
  end_reason character varying(500),
  CONSTRAINT locking_log_pkey PRIMARY KEY (stamp)
);
ALTER TABLE locking_log SET (fillfactor=80, autovacuum_vacuum_scale_factor=0.05, autovacuum_vacuum_threshold=1000, autovacuum_vacuum_cost_delay=0);
CREATE INDEX locking_log_acquired_brin ON public.locking_log USING brin (acquired);

CREATE TABLE locking_permissions (
  lock_name character varying(200) NOT NULL,
  mode character(1) NOT NULL,
  permits integer NOT NULL,
  CONSTRAINT locking_permissions_pk PRIMARY KEY (lock_name, mode),
  CONSTRAINT locking_permissions_mode_ck CHECK ((mode = ANY (ARRAY['R'::bpchar, 'W'::bpchar]))),
  CONSTRAINT locking_permissions_permits_ck CHECK ((permits >= 1))
);

CREATE TABLE locking_waiters (
  lock_name character varying(200) NOT NULL,
  waiter character varying(64) NOT NULL,
  mode character(1) NOT NULL,
  app_id character varying(200) NOT NULL,
  expires timestamp with time zone NOT NULL,
  seq bigint NOT NULL DEFAULT nextval('locking_waiter_seq'::regclass),
  registered timestamp with time zone NOT NULL DEFAULT now(),
  instance character varying(200),
  default_read integer,
  default_write integer,
  lease_ms integer,
  handover boolean NOT NULL DEFAULT false,
  granted bigint,
  CONSTRAINT locking_waiters_pk PRIMARY KEY (lock_name, waiter)
);
CREATE INDEX locking_waiters_granted_idx ON public.locking_waiters USING btree (granted) WHERE (granted IS NOT NULL);
CREATE INDEX locking_waiters_waiter_idx ON public.locking_waiters USING btree (waiter);

CREATE OR REPLACE FUNCTION public.locking_claim_controlled_tick(p_job character varying, p_at double precision, p_period double precision, p_app_id character varying, p_stamp bigint, p_until double precision)
 RETURNS TABLE(tick_ms double precision, claimed boolean, busy boolean, paused boolean, now_ms double precision)
 LANGUAGE plpgsql
AS $function$
#variable_conflict use_column
DECLARE
  v_actor varchar;
  v_reason varchar;
BEGIN
  IF p_stamp IS NOT NULL THEN
    PERFORM pg_advisory_xact_lock(hashtextextended('locking_job:' || p_job, 0));
    SELECT p.actor, p.reason INTO v_actor, v_reason FROM locking_job_pause p WHERE p.job = p_job;
    IF FOUND AND NOT EXISTS (SELECT 1 FROM locking_job_run r
                              WHERE r.job = p_job AND r.outcome = 'running' AND r.stamp = p_stamp) THEN
      RETURN QUERY
      WITH t AS (
        SELECT COALESCE(to_timestamp(p_at / 1000),
                        to_timestamp(floor(extract(epoch FROM clock_timestamp()) * 1000 / p_period) * p_period / 1000)) AS tick
      ), c AS (
        INSERT INTO locking_job_run AS r (job, tick, outcome, actor, reason, claimable_until)
        SELECT p_job, t.tick, 'paused', v_actor, v_reason,
               CASE WHEN p_at IS NULL THEN t.tick + p_period * interval '1 millisecond'
                    ELSE GREATEST(t.tick, to_timestamp(p_until / 1000)) END
          FROM t
        ON CONFLICT (job, tick) DO UPDATE SET
          actor = CASE WHEN r.outcome = 'skipped' THEN excluded.actor ELSE r.actor END,
          reason = CASE WHEN r.outcome = 'skipped' THEN excluded.reason ELSE r.reason END,
          claimable_until = GREATEST(r.claimable_until, excluded.claimable_until),
          outcome = CASE WHEN r.outcome = 'skipped' THEN 'paused' ELSE r.outcome END
        RETURNING r.tick
      )
      SELECT (extract(epoch FROM c.tick) * 1000)::float8, false, false, true,
             (extract(epoch FROM clock_timestamp()) * 1000)::float8
        FROM c;
      RETURN;
    END IF;
  END IF;
  RETURN QUERY SELECT c.tick_ms, c.claimed, c.busy, false, c.now_ms
                 FROM locking_claim_job_tick(p_job, p_at, p_period, p_app_id, p_stamp, p_until) c;
END
$function$;

CREATE OR REPLACE FUNCTION public.locking_claim_job_request(p_job character varying, p_tick double precision, p_app_id character varying, p_stamp bigint)
 RETURNS TABLE(tick_ms double precision, claimed boolean, busy boolean, now_ms double precision)
 LANGUAGE plpgsql
AS $function$
#variable_conflict use_column
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended('locking_job:' || p_job, 0));
    RETURN QUERY SELECT (extract(epoch FROM r.tick) * 1000)::float8, true, false,
                        (extract(epoch FROM clock_timestamp()) * 1000)::float8
                   FROM locking_job_run r
                  WHERE r.job = p_job AND r.outcome = 'running' AND r.stamp = p_stamp
                  LIMIT 1;
    IF FOUND THEN
      RETURN;
    END IF;
  IF EXISTS (SELECT 1 FROM locking_job_run r JOIN locking l ON l.stamp = r.stamp
              WHERE r.job = p_job AND r.outcome = 'running') THEN
    RETURN QUERY SELECT p_tick, false, true, (extract(epoch FROM clock_timestamp()) * 1000)::float8;
    RETURN;
  END IF;
  RETURN QUERY
  WITH c AS (
    UPDATE locking_job_run r SET outcome = 'running', app_id = p_app_id, stamp = p_stamp, started = clock_timestamp()
     WHERE r.job = p_job AND r.tick = to_timestamp(p_tick / 1000) AND r.outcome = 'requested'
    RETURNING 1
  )
  SELECT p_tick, EXISTS (SELECT 1 FROM c), false, (extract(epoch FROM clock_timestamp()) * 1000)::float8;
END
$function$;

CREATE OR REPLACE FUNCTION public.locking_claim_job_tick(p_job character varying, p_at double precision, p_period double precision, p_app_id character varying, p_stamp bigint, p_until double precision)
 RETURNS TABLE(tick_ms double precision, claimed boolean, busy boolean, now_ms double precision)
 LANGUAGE plpgsql
AS $function$
#variable_conflict use_column
BEGIN
  IF p_stamp IS NOT NULL THEN
    PERFORM pg_advisory_xact_lock(hashtextextended('locking_job:' || p_job, 0));
    RETURN QUERY SELECT (extract(epoch FROM r.tick) * 1000)::float8, true, false,
                        (extract(epoch FROM clock_timestamp()) * 1000)::float8
                   FROM locking_job_run r
                  WHERE r.job = p_job AND r.outcome = 'running' AND r.stamp = p_stamp
                  LIMIT 1;
    IF FOUND THEN
      RETURN;
    END IF;
  END IF;
  RETURN QUERY
  WITH t AS (
    SELECT COALESCE(to_timestamp(p_at / 1000),
                    to_timestamp(floor(extract(epoch FROM clock_timestamp()) * 1000 / p_period) * p_period / 1000)) AS tick
  ), b AS (
    SELECT p_stamp IS NULL OR EXISTS (
      SELECT 1 FROM locking_job_run r JOIN locking l ON l.stamp = r.stamp
       WHERE r.job = p_job AND r.outcome = 'running' AND r.tick <> t.tick) AS busy
      FROM t
  ), c AS (
    INSERT INTO locking_job_run AS r (job, tick, outcome, app_id, stamp, started, skipped_busy, claimable_until)
    SELECT p_job, t.tick, CASE WHEN b.busy THEN 'skipped' ELSE 'running' END,
           CASE WHEN b.busy THEN NULL ELSE p_app_id END, CASE WHEN b.busy THEN NULL ELSE p_stamp END,
           CASE WHEN b.busy THEN NULL ELSE clock_timestamp() END, CASE WHEN b.busy THEN 1 ELSE 0 END,
           CASE WHEN p_at IS NULL THEN t.tick + p_period * interval '1 millisecond'
                ELSE GREATEST(t.tick, to_timestamp(p_until / 1000)) END
      FROM t, b
    ON CONFLICT (job, tick) DO UPDATE SET
      app_id = CASE WHEN r.outcome = 'skipped' THEN excluded.app_id ELSE r.app_id END,
      stamp = CASE WHEN r.outcome = 'skipped' THEN excluded.stamp ELSE r.stamp END,
      started = CASE WHEN r.outcome = 'skipped' THEN excluded.started ELSE r.started END,
      skipped_busy = r.skipped_busy + excluded.skipped_busy,
      skipped_elsewhere = r.skipped_elsewhere
        + CASE WHEN r.outcome <> 'skipped' AND excluded.outcome = 'running' THEN 1 ELSE 0 END,
      claimable_until = GREATEST(r.claimable_until, excluded.claimable_until),
      outcome = CASE WHEN r.outcome = 'skipped' THEN excluded.outcome ELSE r.outcome END
    RETURNING r.tick, r.outcome, r.stamp
  )
  SELECT (extract(epoch FROM c.tick) * 1000)::float8, c.outcome = 'running' AND c.stamp IS NOT DISTINCT FROM p_stamp,
         b.busy, (extract(epoch FROM clock_timestamp()) * 1000)::float8
    FROM c, b;
END
$function$;

CREATE OR REPLACE FUNCTION public.locking_force_release(p_stamp bigint, p_actor text, p_reason text)
 RETURNS TABLE(app_id text, instance text, lock_names text[], lock_modes text[], held_for_ms double precision)
 LANGUAGE plpgsql
AS $function$
   DECLARE
     v_log locking_log%ROWTYPE;
   BEGIN
     UPDATE locking_log l SET status = 'FORCED', ended = now(), ended_by = p_actor, end_reason = p_reason,
            version = l.version + 1
      WHERE l.stamp = p_stamp AND l.status IN ('ACQUIRED', 'BUSINESS_DONE')
     RETURNING l.* INTO v_log;
     IF NOT FOUND THEN
       RETURN;
     END IF;
     DELETE FROM locking k WHERE k.stamp = p_stamp;
     PERFORM locking_notify_freed(v_log.lock_names::text[]);
     RETURN QUERY SELECT v_log.app_id::text, v_log.instance::text, v_log.lock_names::text[], v_log.lock_modes::text[],
       (extract(epoch FROM v_log.ended - v_log.acquired) * 1000)::float8;
   END
   $function$;

CREATE OR REPLACE FUNCTION public.locking_hand_over(p_freed text[], p_sync text)
 RETURNS void
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
   DECLARE
     v_waiter        text;
     v_from          integer := 1;
     v_to            integer;
     p_names         text[];
     p_modes         text[];
     p_default_read  integer;
     p_default_write integer;
     v_app           text;
     v_instance      text;
     v_expires       timestamptz;
     v_lease_ms      integer;
     v_ready         boolean;
     v_stamp         bigint;
   BEGIN
     -- The earliest live waiter of the freed names, and all of its rows, locked (its own attempt or clean-up waits; an
     -- attempt behind it does not, see BEHIND_A_WAITER); a hand-over only when every one is live, not handed a grant
     -- yet, and was written by an instance that takes hand-overs.
     SELECT min(s.waiter), array_agg(s.lock_name::text ORDER BY s.lock_name COLLATE "C"),
            array_agg(s.mode::text ORDER BY s.lock_name COLLATE "C"), min(s.expires), min(s.app_id), min(s.instance),
            min(s.default_read), min(s.default_write), min(s.lease_ms), bool_and(s.handover AND s.granted IS NULL AND s.expires > now())
       INTO v_waiter, p_names, p_modes, v_expires, v_app, v_instance, p_default_read, p_default_write, v_lease_ms, v_ready
       FROM (SELECT w.waiter, w.lock_name, w.mode, w.expires, w.app_id, w.instance, w.default_read, w.default_write,
                    w.lease_ms, w.handover, w.granted
               FROM locking_waiters w
              WHERE w.waiter = (SELECT f.waiter FROM locking_waiters f
                                 WHERE f.lock_name = ANY (p_freed) AND f.expires > now() ORDER BY f.seq LIMIT 1)
                FOR NO KEY UPDATE OF w) AS s;
     IF v_waiter IS NOT NULL THEN
       v_to := cardinality(p_names);
       -- The freed names' advisory locks are held (RELEASE_SEES_WAITERS); the waiter's other names' are only tried:
       -- waiting for them out of order could deadlock with an acquisition. Not all free: no hand-over.
       IF v_ready AND v_to > 1 THEN
         v_ready := (SELECT coalesce(bool_and(pg_try_advisory_xact_lock(1819239275, keys.k)), true)
                       FROM (SELECT DISTINCT hashtext(n) AS k FROM unnest(p_names) AS n WHERE n <> ALL (p_freed)) AS keys);
       END IF;
       -- ONE_NAME_FREE: a waiter of one name that nobody holds any more takes it. No waiter before it can hold it back:
       -- it is the earliest live one of the freed names. Otherwise the acquisition's own check, whole.
       IF v_ready AND NOT (v_to = 1 AND NOT EXISTS (SELECT 1 FROM locking l WHERE l.lock_name = p_names[1])) THEN
         v_ready := NOT EXISTS (SELECT 1
           FROM unnest(p_names[v_from:v_to], p_modes[v_from:v_to]) AS r(name, mode)
          WHERE ((SELECT true FROM locking l WHERE l.lock_name = r.name LIMIT 1) IS NOT NULL
                 AND (SELECT count(*) FILTER (WHERE h.mode = r.mode) >= min(h.permits)
                             OR count(*) FILTER (WHERE h.mode <> r.mode) > 0
                        FROM (SELECT held.mode, lim.permits
                                FROM (SELECT coalesce((SELECT p.permits FROM locking_permissions p
                                                        WHERE p.lock_name = r.name AND p.mode = r.mode),
                                                      CASE r.mode WHEN 'W' THEN p_default_write ELSE p_default_read END
                                                     )::bigint AS permits) AS lim
                                CROSS JOIN LATERAL (SELECT l.mode FROM locking l WHERE l.lock_name = r.name
                                                     LIMIT lim.permits + 1) AS held) AS h))
             OR EXISTS (SELECT 1 FROM locking_waiters w WHERE w.lock_name = r.name
                               AND (r.mode = 'W' OR w.mode = 'W') AND w.expires > now()
                               AND w.seq < coalesce((SELECT min(o.seq) FROM locking_waiters o WHERE o.waiter = v_waiter),
                                                    9223372036854775807)
                               AND NOT EXISTS (SELECT 1 FROM locking_waiters g JOIN locking l ON l.lock_name = g.lock_name
                                                WHERE g.waiter = w.waiter AND g.lock_name <> r.name AND g.expires > now()
                                                  AND (g.mode = 'W' OR l.mode = 'W'))));
       END IF;
       IF v_ready THEN
         v_stamp := nextval('locking_stamp_seq');
         WITH handed AS (UPDATE locking_waiters SET granted = v_stamp, expires = now() WHERE waiter = v_waiter),
              held AS (INSERT INTO locking (lock_name, mode, app_id, stamp)
                         SELECT r.name, r.mode, v_app, v_stamp FROM unnest(p_names, p_modes) AS r(name, mode))
         INSERT INTO locking_log (stamp, app_id, instance, lock_names, lock_modes, status, lease_expires)
           VALUES (v_stamp, v_app, v_instance, p_names, p_modes::char(1)[], 'ACQUIRED',
                   least(v_expires, now() + v_lease_ms * interval '1 millisecond'));
         -- A grant is durable, whatever the release asked for itself (asyncRelease): see DURABLE_COMMIT.
         PERFORM set_config('synchronous_commit', CASE p_sync WHEN 'off' THEN 'on' ELSE p_sync END, true),
                 pg_notify('nestjs_db_locks', chr(1) || v_waiter || ' ' || v_stamp || ' ' || floor(extract(epoch FROM v_expires) * 1000)::bigint);
         -- The names handed over for writing are not free any more; those handed for reading are (to other readers).
         IF v_to = 1 THEN
           IF p_modes[1] = 'W' THEN
             p_freed := array_remove(p_freed, p_names[1]);
           END IF;
         ELSE
           p_freed := ARRAY(SELECT f FROM unnest(p_freed) AS f
                             WHERE f <> ALL (ARRAY(SELECT r.name FROM unnest(p_names, p_modes) AS r(name, mode) WHERE r.mode = 'W')));
         END IF;
       END IF;
     END IF;
     IF cardinality(p_freed) > 0 THEN
       PERFORM locking_notify_freed(p_freed);
     END IF;
   END
   $function$;

CREATE OR REPLACE FUNCTION public.locking_notify_freed(p_names text[])
 RETURNS void
 LANGUAGE plpgsql
AS $function$
   BEGIN
     IF cardinality(p_names) > 0 AND EXISTS (SELECT 1 FROM locking_waiters WHERE lock_name = ANY (p_names)) THEN
       PERFORM pg_notify('nestjs_db_locks',
         CASE WHEN octet_length(array_to_string(p_names, E'\n')) > 7000 THEN '*' ELSE array_to_string(p_names, E'\n') END);
     END IF;
   END
   $function$;

CREATE OR REPLACE FUNCTION public.locking_permissions_changed()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
   BEGIN
     PERFORM pg_notify('nestjs_db_locks', '*');
     RETURN NULL;
   END
   $function$;

CREATE OR REPLACE FUNCTION public.locking_reap(p_batch integer, p_max_hold_ms bigint)
 RETURNS bigint[]
 LANGUAGE plpgsql
AS $function$
   DECLARE
     v_reaped bigint[];
     v_freed  text[];
   BEGIN
     WITH stale AS (
       SELECT stamp, version FROM locking_log
        WHERE stamp IN (SELECT stamp FROM locking) AND status IN ('ACQUIRED', 'BUSINESS_DONE')
          AND (lease_expires < now() OR (p_max_hold_ms > 0 AND acquired < now() - p_max_hold_ms * interval '1 millisecond'))
        ORDER BY lease_expires
        LIMIT p_batch
        FOR UPDATE SKIP LOCKED),
     reaped AS (
       UPDATE locking_log l SET status = 'REAPED', ended = now(), version = l.version + 1
         FROM stale s WHERE l.stamp = s.stamp AND l.version = s.version
       RETURNING l.stamp)
     SELECT coalesce(array_agg(stamp), '{}') INTO v_reaped FROM reaped;
     WITH freed AS (DELETE FROM locking WHERE stamp = ANY (v_reaped) RETURNING lock_name)
     SELECT coalesce(array_agg(DISTINCT lock_name), '{}') INTO v_freed FROM freed;
     DELETE FROM locking_waiters WHERE granted = ANY (v_reaped);
     PERFORM locking_notify_freed(v_freed);
     DELETE FROM locking_waiters WHERE expires < now() - interval '1 minute';
     RETURN v_reaped;
   END
   $function$;

CREATE OR REPLACE FUNCTION public.locking_reap_lapsed(p_names text[])
 RETURNS void
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
   DECLARE
     v_reaped bigint[];
     v_freed  text[];
   BEGIN
     WITH lapsed AS (
       SELECT g.stamp FROM locking_log g
        WHERE g.stamp IN (SELECT l.stamp FROM locking l WHERE l.lock_name = ANY (p_names))
          AND g.status IN ('ACQUIRED', 'BUSINESS_DONE') AND g.lease_expires < now()
        FOR UPDATE SKIP LOCKED),
     reaped AS (
       UPDATE locking_log g SET status = 'REAPED', ended = now(), version = g.version + 1
         FROM lapsed s WHERE g.stamp = s.stamp
       RETURNING g.stamp)
     SELECT array_agg(stamp) INTO v_reaped FROM reaped;
     IF v_reaped IS NOT NULL THEN
       WITH freed AS (DELETE FROM locking WHERE stamp = ANY (v_reaped) RETURNING lock_name)
       SELECT coalesce(array_agg(DISTINCT lock_name), '{}') INTO v_freed FROM freed;
       DELETE FROM locking_waiters WHERE granted = ANY (v_reaped);
       PERFORM locking_notify_freed(v_freed);
     END IF;
   END
   $function$;

CREATE OR REPLACE FUNCTION public.locking_recover(p_app_id text)
 RETURNS integer
 LANGUAGE plpgsql
AS $function$
   DECLARE
     v_freed text[];
   BEGIN
     UPDATE locking_log SET status = 'RECOVERED', ended = now(), version = version + 1
      WHERE stamp IN (SELECT stamp FROM locking WHERE app_id = p_app_id) AND status IN ('ACQUIRED', 'BUSINESS_DONE');
     DELETE FROM locking_waiters WHERE app_id = p_app_id;
     WITH freed AS (DELETE FROM locking WHERE app_id = p_app_id RETURNING lock_name)
     SELECT coalesce(array_agg(lock_name), '{}') INTO v_freed FROM freed;
     PERFORM locking_notify_freed(v_freed);
     RETURN cardinality(v_freed);
   END
   $function$;

CREATE OR REPLACE FUNCTION public.locking_release(p_app_id text, p_stamps bigint[], p_async boolean)
 RETURNS bigint[]
 LANGUAGE plpgsql
AS $function$
   DECLARE
     v_stamp    bigint;
     v_names    text[];
     v_freed    text[] := '{}';
     v_released bigint[] := '{}';
     v_sync     text := current_setting('synchronous_commit');
   BEGIN
     PERFORM set_config('enable_seqscan', 'off', true), -- see INDEX_SCANS_ONLY
             CASE WHEN p_async THEN set_config('synchronous_commit', 'off', true) END;
     FOREACH v_stamp IN ARRAY p_stamps LOOP
       UPDATE locking_log SET status = 'RELEASED', ended = now(), version = version + 1
        WHERE stamp = v_stamp AND app_id = p_app_id AND status IN ('ACQUIRED', 'BUSINESS_DONE')
       RETURNING lock_names INTO v_names;
       IF FOUND THEN
         DELETE FROM locking WHERE stamp = v_stamp;
         DELETE FROM locking_waiters WHERE granted = v_stamp;
       END IF;
       IF v_names IS NOT NULL THEN
         v_released := v_released || v_stamp;
         v_freed := v_freed || v_names;
         v_names := NULL;
       END IF;
     END LOOP;
     IF cardinality(v_freed) = 1 THEN
       PERFORM pg_advisory_xact_lock(1819239275, hashtext(v_freed[1]));
     ELSIF cardinality(v_freed) > 1 THEN
       PERFORM pg_advisory_xact_lock(1819239275, keys.k)
          FROM (SELECT DISTINCT hashtext(n) AS k FROM unnest(v_freed) AS n ORDER BY 1) AS keys;
     END IF;
     IF cardinality(v_freed) > 0 AND EXISTS (SELECT 1 FROM locking_waiters w WHERE w.lock_name = ANY (v_freed)) THEN
       PERFORM locking_hand_over(v_freed, v_sync);
     END IF;
     RETURN v_released;
   END
   $function$;

CREATE OR REPLACE FUNCTION public.locking_release_one(p_app_id text, p_stamp bigint, p_async boolean)
 RETURNS boolean
 LANGUAGE plpgsql
AS $function$
   DECLARE
     v_stamp ALIAS FOR p_stamp;
     v_names text[];
     v_sync     text := current_setting('synchronous_commit');
   BEGIN
     PERFORM set_config('enable_seqscan', 'off', true), -- see INDEX_SCANS_ONLY
             CASE WHEN p_async THEN set_config('synchronous_commit', 'off', true) END;
     UPDATE locking_log SET status = 'RELEASED', ended = now(), version = version + 1
        WHERE stamp = v_stamp AND app_id = p_app_id AND status IN ('ACQUIRED', 'BUSINESS_DONE')
       RETURNING lock_names INTO v_names;
       IF FOUND THEN
         DELETE FROM locking WHERE stamp = v_stamp;
         DELETE FROM locking_waiters WHERE granted = v_stamp;
       END IF;
     IF v_names IS NULL THEN
       RETURN false;
     END IF;
     IF cardinality(v_names) = 1 THEN
       PERFORM pg_advisory_xact_lock(1819239275, hashtext(v_names[1]));
     ELSIF cardinality(v_names) > 1 THEN
       PERFORM pg_advisory_xact_lock(1819239275, keys.k)
          FROM (SELECT DISTINCT hashtext(n) AS k FROM unnest(v_names) AS n ORDER BY 1) AS keys;
     END IF;
     IF cardinality(v_names) > 0 AND EXISTS (SELECT 1 FROM locking_waiters w WHERE w.lock_name = ANY (v_names)) THEN
       PERFORM locking_hand_over(v_names, v_sync);
     END IF;
     RETURN true;
   END
   $function$;

CREATE OR REPLACE FUNCTION public.locking_renew(p_app_id text, p_stamps bigint[], p_lease_ms integer)
 RETURNS bigint[]
 LANGUAGE sql
AS $function$
     WITH renewed AS (
       UPDATE locking_log SET lease_expires = now() + p_lease_ms * interval '1 millisecond', version = version + 1
        WHERE stamp = ANY (p_stamps) AND app_id = p_app_id AND status IN ('ACQUIRED', 'BUSINESS_DONE')
       RETURNING stamp)
     SELECT coalesce(array_agg(stamp), '{}') FROM renewed
   $function$;

CREATE OR REPLACE FUNCTION public.locking_try_acquire(p_app_id text, p_instance text, p_names text[], p_modes text[], p_group_ends integer[], p_waiters text[], p_default_read integer, p_default_write integer, p_lease_ms integer)
 RETURNS bigint[]
 LANGUAGE plpgsql
AS $function$
   DECLARE
     v_key    integer;
     v_from   integer := 1;
     v_to     integer;
     v_stamp  bigint;
     v_stamps bigint[] := '{}';
     v_group  integer := 0;
     v_waiter text;
     v_name    text;
     v_mode    text;
     v_permits bigint;
     v_busy    boolean;
   BEGIN
     -- The tables have no CHECK on these columns (see DROP_HOT_PATH_CHECKS): the modes are checked here.
     IF NOT p_modes <@ ARRAY['R', 'W'] THEN
       RAISE EXCEPTION 'locking_try_acquire: modes must be R or W, got %', p_modes USING ERRCODE = '22023';
     END IF;
     IF current_setting('transaction_isolation') <> 'read committed' THEN
       RAISE EXCEPTION 'locking_try_acquire needs READ COMMITTED, the session uses %',
         current_setting('transaction_isolation') USING ERRCODE = 'LK001';
     END IF;
     PERFORM set_config('enable_seqscan', 'off', true); -- see INDEX_SCANS_ONLY
     IF cardinality(p_names) = 1 THEN
       PERFORM pg_advisory_xact_lock(1819239275, hashtext(p_names[1]));
     ELSE
       -- Several names: plan this call's statements once (see GENERIC_PLANS).
       PERFORM set_config('plan_cache_mode', 'force_generic_plan', true);
       -- Every key in one statement, in ascending order: the sorted subquery hands them to the calls one by one.
       PERFORM pg_advisory_xact_lock(1819239275, keys.k)
          FROM (SELECT DISTINCT hashtext(n) AS k FROM unnest(p_names) AS n ORDER BY 1) AS keys;
     END IF;
     -- Group i is p_names[previous end + 1 .. p_group_ends[i]], in arrival order.
     FOREACH v_to IN ARRAY p_group_ends LOOP
       v_group := v_group + 1;
       v_waiter := p_waiters[v_group];
       IF v_from = v_to THEN
         v_name := p_names[v_from];
         v_mode := p_modes[v_from];
         v_busy := EXISTS (SELECT 1 FROM locking l WHERE l.lock_name = v_name);
         IF v_busy THEN
           SELECT p.permits INTO v_permits FROM locking_permissions p WHERE p.lock_name = v_name AND p.mode = v_mode;
           IF NOT FOUND THEN
             v_permits := CASE v_mode WHEN 'W' THEN p_default_write ELSE p_default_read END;
           END IF;
           SELECT count(*) FILTER (WHERE h.mode = v_mode) >= v_permits OR count(*) FILTER (WHERE h.mode <> v_mode) > 0
             INTO v_busy
             FROM (SELECT l.mode FROM locking l WHERE l.lock_name = v_name LIMIT v_permits + 1) AS h;
         END IF;
         -- Waiters in registration order, writers included (see WAITERS_IN_ORDER).
         IF NOT v_busy THEN
           v_busy := EXISTS (SELECT 1 FROM locking_waiters w WHERE w.lock_name = v_name
                               AND (v_mode = 'W' OR w.mode = 'W') AND w.expires > now()
                               AND w.seq < coalesce((SELECT min(o.seq) FROM locking_waiters o WHERE o.waiter = v_waiter),
                                                    9223372036854775807)
                               AND NOT EXISTS (SELECT 1 FROM locking_waiters g JOIN locking l ON l.lock_name = g.lock_name
                                                WHERE g.waiter = w.waiter AND g.lock_name <> v_name AND g.expires > now()
                                                  AND (g.mode = 'W' OR l.mode = 'W')));
         END IF;
       ELSE
         v_busy := EXISTS (SELECT 1
           FROM unnest(p_names[v_from:v_to], p_modes[v_from:v_to]) AS r(name, mode)
          WHERE ((SELECT true FROM locking l WHERE l.lock_name = r.name LIMIT 1) IS NOT NULL
                 AND (SELECT count(*) FILTER (WHERE h.mode = r.mode) >= min(h.permits)
                             OR count(*) FILTER (WHERE h.mode <> r.mode) > 0
                        FROM (SELECT held.mode, lim.permits
                                FROM (SELECT coalesce((SELECT p.permits FROM locking_permissions p
                                                        WHERE p.lock_name = r.name AND p.mode = r.mode),
                                                      CASE r.mode WHEN 'W' THEN p_default_write ELSE p_default_read END
                                                     )::bigint AS permits) AS lim
                                CROSS JOIN LATERAL (SELECT l.mode FROM locking l WHERE l.lock_name = r.name
                                                     LIMIT lim.permits + 1) AS held) AS h))
             OR EXISTS (SELECT 1 FROM locking_waiters w WHERE w.lock_name = r.name
                               AND (r.mode = 'W' OR w.mode = 'W') AND w.expires > now()
                               AND w.seq < coalesce((SELECT min(o.seq) FROM locking_waiters o WHERE o.waiter = v_waiter),
                                                    9223372036854775807)
                               AND NOT EXISTS (SELECT 1 FROM locking_waiters g JOIN locking l ON l.lock_name = g.lock_name
                                                WHERE g.waiter = w.waiter AND g.lock_name <> r.name AND g.expires > now()
                                                  AND (g.mode = 'W' OR l.mode = 'W'))));
       END IF;
       IF v_busy THEN
         v_stamps := v_stamps || 0::bigint;
       ELSE
         v_stamp := nextval('locking_stamp_seq');
         IF v_from = v_to THEN
           INSERT INTO locking (lock_name, mode, app_id, stamp) VALUES (v_name, v_mode, p_app_id, v_stamp);
         ELSE
           INSERT INTO locking (lock_name, mode, app_id, stamp)
             SELECT r.name, r.mode, p_app_id, v_stamp FROM unnest(p_names[v_from:v_to], p_modes[v_from:v_to]) AS r(name, mode);
         END IF;
         INSERT INTO locking_log (stamp, app_id, instance, lock_names, lock_modes, status, lease_expires)
           VALUES (v_stamp, p_app_id, p_instance, p_names[v_from:v_to], p_modes[v_from:v_to]::char(1)[], 'ACQUIRED',
                   now() + p_lease_ms * interval '1 millisecond');
         IF v_waiter IS NOT NULL THEN
           DELETE FROM locking_waiters WHERE waiter = v_waiter;
         END IF;
         v_stamps := v_stamps || v_stamp;
       END IF;
       v_from := v_to + 1;
     END LOOP;
     RETURN v_stamps;
   END
   $function$;

CREATE OR REPLACE FUNCTION public.locking_try_acquire_one(p_app_id text, p_instance text, p_name text, p_mode text, p_waiter text, p_default_read integer, p_default_write integer, p_lease_ms integer)
 RETURNS bigint
 LANGUAGE plpgsql
AS $function$
   DECLARE
     v_name    ALIAS FOR p_name;
     v_mode    ALIAS FOR p_mode;
     v_waiter  ALIAS FOR p_waiter;
     v_stamp   bigint;
     v_permits bigint;
     v_busy    boolean;
   BEGIN
     IF v_mode IS NULL OR v_mode NOT IN ('R', 'W') THEN
       RAISE EXCEPTION 'locking_try_acquire: modes must be R or W, got %', v_mode USING ERRCODE = '22023';
     END IF;
     IF current_setting('transaction_isolation') <> 'read committed' THEN
       RAISE EXCEPTION 'locking_try_acquire needs READ COMMITTED, the session uses %',
         current_setting('transaction_isolation') USING ERRCODE = 'LK001';
     END IF;
     PERFORM set_config('enable_seqscan', 'off', true); -- see INDEX_SCANS_ONLY
     PERFORM pg_advisory_xact_lock(1819239275, hashtext(v_name));
         v_busy := EXISTS (SELECT 1 FROM locking l WHERE l.lock_name = v_name);
         IF v_busy THEN
           SELECT p.permits INTO v_permits FROM locking_permissions p WHERE p.lock_name = v_name AND p.mode = v_mode;
           IF NOT FOUND THEN
             v_permits := CASE v_mode WHEN 'W' THEN p_default_write ELSE p_default_read END;
           END IF;
           SELECT count(*) FILTER (WHERE h.mode = v_mode) >= v_permits OR count(*) FILTER (WHERE h.mode <> v_mode) > 0
             INTO v_busy
             FROM (SELECT l.mode FROM locking l WHERE l.lock_name = v_name LIMIT v_permits + 1) AS h;
         END IF;
         -- Waiters in registration order, writers included (see WAITERS_IN_ORDER).
         IF NOT v_busy THEN
           v_busy := EXISTS (SELECT 1 FROM locking_waiters w WHERE w.lock_name = v_name
                               AND (v_mode = 'W' OR w.mode = 'W') AND w.expires > now()
                               AND w.seq < coalesce((SELECT min(o.seq) FROM locking_waiters o WHERE o.waiter = v_waiter),
                                                    9223372036854775807)
                               AND NOT EXISTS (SELECT 1 FROM locking_waiters g JOIN locking l ON l.lock_name = g.lock_name
                                                WHERE g.waiter = w.waiter AND g.lock_name <> v_name AND g.expires > now()
                                                  AND (g.mode = 'W' OR l.mode = 'W')));
         END IF;
     IF v_busy THEN
       RETURN 0;
     END IF;
     v_stamp := nextval('locking_stamp_seq');
     INSERT INTO locking (lock_name, mode, app_id, stamp) VALUES (v_name, v_mode, p_app_id, v_stamp);
         INSERT INTO locking_log (stamp, app_id, instance, lock_names, lock_modes, status, lease_expires)
           VALUES (v_stamp, p_app_id, p_instance, ARRAY[v_name], ARRAY[v_mode]::char(1)[], 'ACQUIRED',
                   now() + p_lease_ms * interval '1 millisecond');
         IF v_waiter IS NOT NULL THEN
           DELETE FROM locking_waiters WHERE waiter = v_waiter;
         END IF;
     RETURN v_stamp;
   END
   $function$;

CREATE OR REPLACE FUNCTION public.locking_wait_acquire(p_app_id text, p_instance text, p_names text[], p_modes text[], p_group_ends integer[], p_waiters text[], p_default_read integer, p_default_write integer, p_lease_ms integer, p_ttl_ms integer)
 RETURNS bigint[]
 LANGUAGE plpgsql
AS $function$
   DECLARE
     v_key    integer;
     v_from   integer := 1;
     v_to     integer;
     v_stamp  bigint;
     v_stamps bigint[] := '{}';
     v_group  integer := 0;
     v_waiter text;
     v_name    text;
     v_mode    text;
     v_permits bigint;
     v_busy    boolean;
   BEGIN
     -- The tables have no CHECK on these columns (see DROP_HOT_PATH_CHECKS): the modes are checked here.
     IF NOT p_modes <@ ARRAY['R', 'W'] THEN
       RAISE EXCEPTION 'locking_try_acquire: modes must be R or W, got %', p_modes USING ERRCODE = '22023';
     END IF;
     IF current_setting('transaction_isolation') <> 'read committed' THEN
       RAISE EXCEPTION 'locking_try_acquire needs READ COMMITTED, the session uses %',
         current_setting('transaction_isolation') USING ERRCODE = 'LK001';
     END IF;
     PERFORM set_config('enable_seqscan', 'off', true); -- see INDEX_SCANS_ONLY
     IF cardinality(p_names) = 1 THEN
       PERFORM pg_advisory_xact_lock(1819239275, hashtext(p_names[1]));
     ELSE
       -- Several names: plan this call's statements once (see GENERIC_PLANS).
       PERFORM set_config('plan_cache_mode', 'force_generic_plan', true);
       -- Every key in one statement, in ascending order: the sorted subquery hands them to the calls one by one.
       PERFORM pg_advisory_xact_lock(1819239275, keys.k)
          FROM (SELECT DISTINCT hashtext(n) AS k FROM unnest(p_names) AS n ORDER BY 1) AS keys;
     END IF;
     -- Group i is p_names[previous end + 1 .. p_group_ends[i]], in arrival order.
     FOREACH v_to IN ARRAY p_group_ends LOOP
       v_group := v_group + 1;
       v_waiter := p_waiters[v_group];
       v_stamp := NULL;
       IF v_waiter IS NOT NULL THEN
         SELECT w.granted INTO v_stamp FROM locking_waiters w
          WHERE w.waiter = v_waiter AND w.granted IS NOT NULL LIMIT 1;
         IF v_stamp IS NOT NULL THEN
           DELETE FROM locking_waiters WHERE waiter = v_waiter;
           UPDATE locking_log SET lease_expires = now() + p_lease_ms * interval '1 millisecond', version = version + 1
            WHERE stamp = v_stamp AND status IN ('ACQUIRED', 'BUSINESS_DONE') AND lease_expires > now();
           IF NOT FOUND THEN
             v_stamp := NULL;
           END IF;
         END IF;
         IF v_stamp IS NULL THEN
           PERFORM locking_reap_lapsed(p_names[v_from:v_to]);
         END IF;
       END IF;
       IF v_stamp IS NULL THEN
         IF v_from = v_to THEN
           v_name := p_names[v_from];
           v_mode := p_modes[v_from];
         v_busy := EXISTS (SELECT 1 FROM locking l WHERE l.lock_name = v_name);
         IF v_busy THEN
           SELECT p.permits INTO v_permits FROM locking_permissions p WHERE p.lock_name = v_name AND p.mode = v_mode;
           IF NOT FOUND THEN
             v_permits := CASE v_mode WHEN 'W' THEN p_default_write ELSE p_default_read END;
           END IF;
           SELECT count(*) FILTER (WHERE h.mode = v_mode) >= v_permits OR count(*) FILTER (WHERE h.mode <> v_mode) > 0
             INTO v_busy
             FROM (SELECT l.mode FROM locking l WHERE l.lock_name = v_name LIMIT v_permits + 1) AS h;
         END IF;
         -- Waiters in registration order, writers included (see WAITERS_IN_ORDER).
         IF NOT v_busy THEN
           v_busy := EXISTS (SELECT 1 FROM locking_waiters w WHERE w.lock_name = v_name
                               AND (v_mode = 'W' OR w.mode = 'W') AND w.expires > now()
                               AND w.seq < coalesce((SELECT min(o.seq) FROM locking_waiters o WHERE o.waiter = v_waiter),
                                                    9223372036854775807)
                               AND NOT EXISTS (SELECT 1 FROM locking_waiters g JOIN locking l ON l.lock_name = g.lock_name
                                                WHERE g.waiter = w.waiter AND g.lock_name <> v_name AND g.expires > now()
                                                  AND (g.mode = 'W' OR l.mode = 'W')));
         END IF;
         ELSE
           v_busy := EXISTS (SELECT 1
           FROM unnest(p_names[v_from:v_to], p_modes[v_from:v_to]) AS r(name, mode)
          WHERE ((SELECT true FROM locking l WHERE l.lock_name = r.name LIMIT 1) IS NOT NULL
                 AND (SELECT count(*) FILTER (WHERE h.mode = r.mode) >= min(h.permits)
                             OR count(*) FILTER (WHERE h.mode <> r.mode) > 0
                        FROM (SELECT held.mode, lim.permits
                                FROM (SELECT coalesce((SELECT p.permits FROM locking_permissions p
                                                        WHERE p.lock_name = r.name AND p.mode = r.mode),
                                                      CASE r.mode WHEN 'W' THEN p_default_write ELSE p_default_read END
                                                     )::bigint AS permits) AS lim
                                CROSS JOIN LATERAL (SELECT l.mode FROM locking l WHERE l.lock_name = r.name
                                                     LIMIT lim.permits + 1) AS held) AS h))
             OR EXISTS (SELECT 1 FROM locking_waiters w WHERE w.lock_name = r.name
                               AND (r.mode = 'W' OR w.mode = 'W') AND w.expires > now()
                               AND w.seq < coalesce((SELECT min(o.seq) FROM locking_waiters o WHERE o.waiter = v_waiter),
                                                    9223372036854775807)
                               AND NOT EXISTS (SELECT 1 FROM locking_waiters g JOIN locking l ON l.lock_name = g.lock_name
                                                WHERE g.waiter = w.waiter AND g.lock_name <> r.name AND g.expires > now()
                                                  AND (g.mode = 'W' OR l.mode = 'W'))));
         END IF;
         IF v_busy THEN
           v_stamp := 0;
           IF v_waiter IS NOT NULL THEN
           INSERT INTO locking_waiters (lock_name, waiter, mode, app_id, expires, instance, default_read, default_write,
                                      lease_ms, handover)
           SELECT r.name, v_waiter, r.mode, p_app_id, now() + p_ttl_ms * interval '1 millisecond', p_instance,
                  p_default_read, p_default_write, p_lease_ms, true
             FROM unnest(p_names[v_from:v_to], p_modes[v_from:v_to]) AS r(name, mode)
           ON CONFLICT (lock_name, waiter) DO UPDATE SET expires = EXCLUDED.expires WHERE locking_waiters.granted IS NULL;
         PERFORM set_config('synchronous_commit', 'off', true);
         v_stamp := -floor(extract(epoch FROM now() + p_ttl_ms * interval '1 millisecond') * 1000)::bigint;
           END IF;
         ELSE
           v_stamp := nextval('locking_stamp_seq');
           INSERT INTO locking (lock_name, mode, app_id, stamp)
             SELECT r.name, r.mode, p_app_id, v_stamp FROM unnest(p_names[v_from:v_to], p_modes[v_from:v_to]) AS r(name, mode);
           INSERT INTO locking_log (stamp, app_id, instance, lock_names, lock_modes, status, lease_expires)
             VALUES (v_stamp, p_app_id, p_instance, p_names[v_from:v_to], p_modes[v_from:v_to]::char(1)[], 'ACQUIRED',
                     now() + p_lease_ms * interval '1 millisecond');
         IF v_waiter IS NOT NULL THEN
           DELETE FROM locking_waiters WHERE waiter = v_waiter;
         END IF;
         END IF;
       END IF;
       v_stamps := v_stamps || v_stamp;
       v_from := v_to + 1;
     END LOOP;
     RETURN v_stamps;
   END
   $function$;

CREATE OR REPLACE FUNCTION public.locking_wait_acquire_one(p_app_id text, p_instance text, p_name text, p_mode text, p_waiter text, p_default_read integer, p_default_write integer, p_lease_ms integer, p_ttl_ms integer)
 RETURNS bigint
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
   DECLARE
     v_name    ALIAS FOR p_name;
     v_mode    ALIAS FOR p_mode;
     v_waiter  ALIAS FOR p_waiter;
     v_stamp   bigint;
     v_permits bigint;
     v_busy    boolean;
   BEGIN
     IF v_mode IS NULL OR v_mode NOT IN ('R', 'W') THEN
       RAISE EXCEPTION 'locking_try_acquire: modes must be R or W, got %', v_mode USING ERRCODE = '22023';
     END IF;
     IF current_setting('transaction_isolation') <> 'read committed' THEN
       RAISE EXCEPTION 'locking_try_acquire needs READ COMMITTED, the session uses %',
         current_setting('transaction_isolation') USING ERRCODE = 'LK001';
     END IF;
     PERFORM set_config('enable_seqscan', 'off', true); -- see INDEX_SCANS_ONLY
     IF v_waiter IS NOT NULL
        AND NOT EXISTS (SELECT 1 FROM locking_waiters m WHERE m.waiter = v_waiter AND m.granted IS NOT NULL) THEN
       PERFORM 1 FROM locking_waiters w
        WHERE w.lock_name = v_name AND (v_mode = 'W' OR w.mode = 'W') AND w.expires > now() AND w.granted IS NULL
          AND w.seq < coalesce((SELECT min(o.seq) FROM locking_waiters o WHERE o.waiter = v_waiter), 9223372036854775807)
          AND NOT EXISTS (SELECT 1 FROM locking_waiters g WHERE g.waiter = w.waiter AND g.lock_name <> v_name)
        LIMIT 1 FOR KEY SHARE OF w;
       IF FOUND THEN
         INSERT INTO locking_waiters (lock_name, waiter, mode, app_id, expires, instance, default_read, default_write,
                                      lease_ms, handover)
           SELECT r.name, v_waiter, r.mode, p_app_id, now() + p_ttl_ms * interval '1 millisecond', p_instance,
                  p_default_read, p_default_write, p_lease_ms, true
             FROM unnest(ARRAY[v_name], ARRAY[v_mode]) AS r(name, mode)
           ON CONFLICT (lock_name, waiter) DO UPDATE SET expires = EXCLUDED.expires WHERE locking_waiters.granted IS NULL;
         PERFORM set_config('synchronous_commit', 'off', true);
         v_stamp := -floor(extract(epoch FROM now() + p_ttl_ms * interval '1 millisecond') * 1000)::bigint;
         RETURN v_stamp;
       END IF;
     END IF;
     PERFORM pg_advisory_xact_lock(1819239275, hashtext(v_name));
     IF v_waiter IS NOT NULL THEN
         SELECT w.granted INTO v_stamp FROM locking_waiters w
          WHERE w.waiter = v_waiter AND w.granted IS NOT NULL LIMIT 1;
         IF v_stamp IS NOT NULL THEN
           DELETE FROM locking_waiters WHERE waiter = v_waiter;
           UPDATE locking_log SET lease_expires = now() + p_lease_ms * interval '1 millisecond', version = version + 1
            WHERE stamp = v_stamp AND status IN ('ACQUIRED', 'BUSINESS_DONE') AND lease_expires > now();
           IF NOT FOUND THEN
             v_stamp := NULL;
           END IF;
         END IF;
         IF v_stamp IS NULL THEN
           PERFORM locking_reap_lapsed(ARRAY[v_name]);
         END IF;
       IF v_stamp IS NOT NULL THEN
         RETURN v_stamp;
       END IF;
     END IF;
         v_busy := EXISTS (SELECT 1 FROM locking l WHERE l.lock_name = v_name);
         IF v_busy THEN
           SELECT p.permits INTO v_permits FROM locking_permissions p WHERE p.lock_name = v_name AND p.mode = v_mode;
           IF NOT FOUND THEN
             v_permits := CASE v_mode WHEN 'W' THEN p_default_write ELSE p_default_read END;
           END IF;
           SELECT count(*) FILTER (WHERE h.mode = v_mode) >= v_permits OR count(*) FILTER (WHERE h.mode <> v_mode) > 0
             INTO v_busy
             FROM (SELECT l.mode FROM locking l WHERE l.lock_name = v_name LIMIT v_permits + 1) AS h;
         END IF;
         -- Waiters in registration order, writers included (see WAITERS_IN_ORDER).
         IF NOT v_busy THEN
           v_busy := EXISTS (SELECT 1 FROM locking_waiters w WHERE w.lock_name = v_name
                               AND (v_mode = 'W' OR w.mode = 'W') AND w.expires > now()
                               AND w.seq < coalesce((SELECT min(o.seq) FROM locking_waiters o WHERE o.waiter = v_waiter),
                                                    9223372036854775807)
                               AND NOT EXISTS (SELECT 1 FROM locking_waiters g JOIN locking l ON l.lock_name = g.lock_name
                                                WHERE g.waiter = w.waiter AND g.lock_name <> v_name AND g.expires > now()
                                                  AND (g.mode = 'W' OR l.mode = 'W')));
         END IF;
     IF v_busy THEN
       IF v_waiter IS NOT NULL THEN
         INSERT INTO locking_waiters (lock_name, waiter, mode, app_id, expires, instance, default_read, default_write,
                                      lease_ms, handover)
           SELECT r.name, v_waiter, r.mode, p_app_id, now() + p_ttl_ms * interval '1 millisecond', p_instance,
                  p_default_read, p_default_write, p_lease_ms, true
             FROM unnest(ARRAY[v_name], ARRAY[v_mode]) AS r(name, mode)
           ON CONFLICT (lock_name, waiter) DO UPDATE SET expires = EXCLUDED.expires WHERE locking_waiters.granted IS NULL;
         PERFORM set_config('synchronous_commit', 'off', true);
         v_stamp := -floor(extract(epoch FROM now() + p_ttl_ms * interval '1 millisecond') * 1000)::bigint;
         RETURN v_stamp;
       END IF;
       RETURN 0;
     END IF;
     v_stamp := nextval('locking_stamp_seq');
     INSERT INTO locking (lock_name, mode, app_id, stamp) VALUES (v_name, v_mode, p_app_id, v_stamp);
     INSERT INTO locking_log (stamp, app_id, instance, lock_names, lock_modes, status, lease_expires)
       VALUES (v_stamp, p_app_id, p_instance, ARRAY[v_name], ARRAY[v_mode]::char(1)[], 'ACQUIRED',
               now() + p_lease_ms * interval '1 millisecond');
         IF v_waiter IS NOT NULL THEN
           DELETE FROM locking_waiters WHERE waiter = v_waiter;
         END IF;
     RETURN v_stamp;
   END
   $function$;

CREATE TRIGGER locking_permissions_notify AFTER INSERT OR DELETE OR UPDATE ON locking_permissions FOR EACH STATEMENT EXECUTE FUNCTION locking_permissions_changed();
