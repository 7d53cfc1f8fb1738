-- 0011: x402 inbound. A served request whose payment could not be settled
-- is kept here until a retry settles it; its payer is refused meanwhile
-- (host/paywall). The payment and the offer are stored as the JSON a
-- retry sends the facilitator; they hold a signature, not a secret.
CREATE TABLE x402_settlements (
	id           INTEGER PRIMARY KEY,
	payer        TEXT NOT NULL,
	request_id   TEXT NOT NULL,
	network      TEXT NOT NULL,
	amount       TEXT NOT NULL,
	payload      BLOB NOT NULL,
	requirements BLOB NOT NULL,
	attempts     INTEGER NOT NULL DEFAULT 1,
	last_error   TEXT NOT NULL DEFAULT '',
	created      INTEGER NOT NULL,
	settled      INTEGER NOT NULL DEFAULT 0,
	tx           TEXT NOT NULL DEFAULT ''
) STRICT;
CREATE INDEX x402_settlements_owed ON x402_settlements(payer) WHERE settled = 0;
