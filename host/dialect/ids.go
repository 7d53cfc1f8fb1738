package dialect

import "crypto/rand"

const idAlphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// RandomID returns prefix followed by 24 random alphanumerics, the shape of
// the providers' own ids ("chatcmpl-…", "msg_…", "call_…", "toolu_…").
func RandomID(prefix string) string {
	var r [24]byte
	_, _ = rand.Read(r[:])
	b := make([]byte, 0, len(prefix)+len(r))
	b = append(b, prefix...)
	for _, c := range r {
		b = append(b, idAlphabet[int(c)%len(idAlphabet)])
	}
	return string(b)
}
