"""Migration 7: job leases. A ``running`` job carries its owner (host, pid and process start identity, see
``jobs/lease.py``) and a heartbeat the owner refreshes, so a second process on the same database re-queues only
jobs whose owner is gone, never live work.
"""

LEASES_SQL = """
ALTER TABLE jobs ADD COLUMN lease_owner TEXT CHECK (lease_owner IS NULL OR length(lease_owner) BETWEEN 1 AND 300);
ALTER TABLE jobs ADD COLUMN heartbeat_at REAL CHECK ((heartbeat_at IS NULL) = (lease_owner IS NULL));

-- A lease lives exactly as long as the 'running' status: any write that moves a job out of it (done, failed, a
-- backoff, a release at shutdown, a re-queue by its own handler or by an erase) drops the owner.
CREATE TRIGGER jobs_lease_ends AFTER UPDATE OF status ON jobs
WHEN NEW.status != 'running' AND NEW.lease_owner IS NOT NULL
BEGIN
  UPDATE jobs SET lease_owner = NULL, heartbeat_at = NULL WHERE id = NEW.id;
END;

CREATE INDEX jobs_leases ON jobs(lease_owner) WHERE lease_owner IS NOT NULL;
"""
