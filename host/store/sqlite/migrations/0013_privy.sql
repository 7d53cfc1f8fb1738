-- 0013: Privy users. A Privy access token names its user by a DID
-- (did:privy:…); this maps each DID to the account it is billed to
-- (host/auth Privy). An account may have several DIDs; a DID one account.
CREATE TABLE privy_users (
	did        TEXT PRIMARY KEY,
	account_id TEXT NOT NULL REFERENCES accounts(id),
	created    INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
CREATE INDEX privy_users_account ON privy_users(account_id);
