-- 0003: billing. A key's own rate limit, a usage record's shortfall,
-- spending budgets per key or account and UTC day or month, and an index
-- that lets Audit match each reservation-less charge (Post) to its record.
ALTER TABLE keys ADD COLUMN rate_limit INTEGER NOT NULL DEFAULT 0 CHECK (rate_limit >= 0);
ALTER TABLE usage ADD COLUMN shortfall INTEGER NOT NULL DEFAULT 0;

CREATE TABLE spend_budgets (
	scope        TEXT NOT NULL CHECK (scope IN ('key', 'account')),
	subject      TEXT NOT NULL,
	period       TEXT NOT NULL CHECK (period IN ('day', 'month')),
	account_id   TEXT NOT NULL REFERENCES accounts(id),
	limit_micros INTEGER NOT NULL CHECK (limit_micros > 0),
	PRIMARY KEY (scope, subject, period)
) STRICT, WITHOUT ROWID;
CREATE INDEX spend_budgets_account ON spend_budgets(account_id);

CREATE INDEX ledger_charge_request ON ledger(request_id) WHERE kind = 'charge' AND reservation_id = 0;
