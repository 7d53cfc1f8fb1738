package main

import "unsafe"

// A 64-hex-digit value (0x-prefixed or not) is an Ethereum private key only
// sometimes: in agent traffic it is far more often a transaction hash, a
// block hash, a storage slot, an event topic or a digest. Blocking every
// such value refused a DeFi agent's requests all day (once a transaction
// hash is in the history, every later turn carries it). So the value is
// classified from the words around it:
//
//   - key context — "private key", "privkey", "pk", "secret", "seed",
//     "mnemonic", "sign with", "my key", an env name such as PRIVATE_KEY=
//     or a JSON member "privateKey" — makes it eth_private_key;
//   - hash context — "tx", "hash", "txHash", "transactionHash", "blockHash",
//     "block", "slot", "storage", "topic", "root", "digest", "sha256",
//     "keccak", an etherscan /tx/ URL, a JSON member "hash" — makes it
//     nothing: it is not a secret and passes unchanged;
//   - neither makes it hex64, which is masked by default (the model sees a
//     placeholder, its answer and tool calls get the value back).
//
// Key context wins when both appear, because sending a key upstream costs
// far more than masking a hash. The words looked at are those of the same
// clause before the value (up to 64 bytes, stopping at . ; , { } ( ) |
// and line ends: JSON members and list items are separate clauses), then, if
// that decided nothing, the clause after it (up to 40 bytes). For a string
// inside a block's JSON the member name it is the value of comes first.

// Classes a 64-hex value's context puts it in.
const (
	hexUnclear = iota
	hexKey
	hexHash
)

var keyWords = map[string]bool{
	"private": true, "priv": true, "privkey": true, "privatekey": true, "pk": true, "pkey": true,
	"secret": true, "secrets": true, "seed": true, "mnemonic": true, "sign": true, "signing": true,
	"signer": true, "keystore": true, "wif": true,
}

var hashWords = map[string]bool{
	"hash": true, "hashes": true, "tx": true, "txn": true, "txs": true, "txid": true, "txhash": true,
	"transaction": true, "transactions": true, "block": true, "blockhash": true, "slot": true,
	"storage": true, "topic": true, "topics": true, "root": true, "digest": true, "sha256": true,
	"sha": true, "sha3": true, "keccak": true, "keccak256": true, "commit": true, "receipt": true,
	"id": true, "uuid": true, "event": true, "log": true, "logs": true, "merkle": true, "parent": true,
	"nullifier": true, "commitment": true, "salt": true, "codehash": true, "bytecode": true,
}

// possessives make a bare "key" personal ("my key is 0x…").
var possessives = map[string]bool{"my": true, "your": true, "our": true, "his": true, "her": true, "their": true, "wallet": true}

// hexContext classifies the 64-hex value s[start:end]; member is the JSON
// member name the segment is the value of ("" for text).
func hexContext(s string, start, end int, member string) int {
	lo := max(0, start-64)
	before := s[lo:start]
	cut := false
	for i := len(before) - 1; i >= 0; i-- {
		if clauseEnd(before[i]) {
			before, cut = before[i+1:], true
			break
		}
	}
	var words []string
	if !cut && lo == 0 && member != "" {
		words = splitWords(member, words)
	}
	words = splitWords(before, words)
	if c := classifyWords(words); c != hexUnclear {
		return c
	}
	after := s[end:min(len(s), end+40)]
	for i := 0; i < len(after); i++ {
		if clauseEnd(after[i]) {
			after = after[:i]
			break
		}
	}
	return classifyWords(splitWords(after, words[:0]))
}

func clauseEnd(c byte) bool {
	switch c {
	case '.', ';', ',', '{', '}', '(', ')', '|', '\n', '\r':
		return true
	}
	return false
}

// classifyWords: any key signal makes it a key; else any hash signal a
// hash. A bare "key" counts only after a possessive ("my key"); after
// "storage"/"slot" it is a hash word already counted.
func classifyWords(words []string) int {
	hash := false
	for i, w := range words {
		switch {
		case keyWords[w]:
			return hexKey
		case w == "key" || w == "keys":
			if i > 0 && possessives[words[i-1]] {
				return hexKey
			}
		case hashWords[w]:
			hash = true
		}
	}
	if hash {
		return hexHash
	}
	return hexUnclear
}

// splitWords appends the lowercased words of s to out: runs of letters and
// digits, split at case changes too (txHash → tx, hash; PRIVATE_KEY →
// private, key). Hex values and numbers among them match no word list.
func splitWords(s string, out []string) []string {
	start := -1
	flush := func(i int) {
		if start >= 0 && i > start {
			out = append(out, lowerASCII(s[start:i]))
		}
		start = -1
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		isL, isU, isD := 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9'
		if !isL && !isU && !isD {
			flush(i)
			continue
		}
		if start < 0 {
			start = i
			continue
		}
		// A lower-to-upper change starts a new word (camelCase).
		if isU && 'a' <= s[i-1] && s[i-1] <= 'z' {
			flush(i)
			start = i
		}
	}
	flush(len(s))
	return out
}

func lowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if 'A' <= b[j] && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// jsonMember returns the name of the JSON object member whose string value
// starts at raw[rs] (rs is just after the opening quote), or "" when the
// string is an array element or the name cannot be read simply.
func jsonMember(raw []byte, rs int) string {
	i := rs - 2 // the byte before the opening quote
	for i >= 0 && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\n' || raw[i] == '\r') {
		i--
	}
	if i < 0 || raw[i] != ':' {
		return ""
	}
	i--
	for i >= 0 && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\n' || raw[i] == '\r') {
		i--
	}
	if i < 0 || raw[i] != '"' {
		return ""
	}
	end := i
	for i--; i >= 0 && raw[i] != '"'; i-- {
		if raw[i] == '\\' || end-i > 64 {
			return ""
		}
	}
	if i < 0 {
		return ""
	}
	// A view of the call's input: kept only by the memo, which copies it.
	return unsafe.String(&raw[i+1], end-i-1)
}
