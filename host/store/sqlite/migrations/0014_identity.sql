-- 0014: ERC-8004 identities linked to keys (host/identity). agent is the
-- ERC's global id, eip155:<chainId>:<identity registry>:<agentId>; an
-- agent acts for one key and a key for one agent. signer is the owner or
-- agent wallet that signed the link. identity_nonces holds every link
-- proof's nonce, so a proof is never accepted twice (also after an unlink).
CREATE TABLE identity_links (
	agent   TEXT PRIMARY KEY,
	key_id  TEXT NOT NULL UNIQUE REFERENCES keys(id),
	signer  TEXT NOT NULL,
	created INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
CREATE TABLE identity_nonces (
	nonce   TEXT PRIMARY KEY,
	created INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
