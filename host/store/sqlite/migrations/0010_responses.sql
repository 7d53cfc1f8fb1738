-- 0010: stored answers of the Responses API (POST /v1/responses with
-- store), per tenant, until they expire; previous_response_id chains read
-- them back, across restarts.
CREATE TABLE responses (
	tenant   TEXT NOT NULL,
	id       TEXT NOT NULL,
	previous TEXT NOT NULL,
	model    TEXT NOT NULL,
	input    BLOB NOT NULL, -- this turn's input items, a JSON array
	response BLOB NOT NULL, -- the response object as answered
	created  INTEGER NOT NULL, -- Unix µs
	expires  INTEGER NOT NULL, -- Unix µs; 0 = never
	PRIMARY KEY (tenant, id)
) STRICT, WITHOUT ROWID;

CREATE INDEX responses_expires ON responses(expires) WHERE expires > 0;
