//go:build !wasip1

package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/sdk/plugintest"
)

// found is a detection as tests state it.
type found struct {
	kind  string
	value string
}

func scanAll(t *testing.T, s string) []found {
	t.Helper()
	var d detector
	for i := range d.on {
		d.on[i] = true
	}
	sp := sortSpans(d.scan(s, nil), func(int) int { return actMask })
	var out []found
	for _, x := range sp {
		out = append(out, found{builtins[x.ent].name, s[x.start:x.end]})
	}
	return out
}

const (
	privKey  = "4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"
	mnemonic = "abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about"
)

func TestDetect(t *testing.T) {
	plugintest.New(t, `{}`) // the wordlist and host functions
	cases := []struct {
		in   string
		want []found
	}{
		// e-mail
		{"write to john.doe+tag@example.co.uk today", []found{{"email", "john.doe+tag@example.co.uk"}}},
		{"<a@b.io>, (x_y@sub.domain.org).", []found{{"email", "a@b.io"}, {"email", "x_y@sub.domain.org"}}},
		{"@handle and foo@bar and foo@bar.c and user@.com", nil},
		// phone
		{"call +1 415 555 2671 now", []found{{"phone", "+1 415 555 2671"}}},
		{"+44 20 7946 0958; +14155552671, +49 (30) 123456", []found{{"phone", "+44 20 7946 0958"}, {"phone", "+14155552671"}, {"phone", "+49 (30) 123456"}}},
		{"(415) 555-2671 or 415-555-2671 or 415.555.2671 or 415 555 2671", []found{{"phone", "(415) 555-2671"}, {"phone", "415-555-2671"}, {"phone", "415.555.2671"}, {"phone", "415 555 2671"}}},
		{"1-800-555-0199 and 1 (800) 555-0199", []found{{"phone", "1-800-555-0199"}, {"phone", "1 (800) 555-0199"}}},
		{"on 2024-01-15 at 12:30:45 it cost $1,234.56 (12345678), pi 3.14159, ext 555-1234, v10.2.3, 4155552671, +12%", nil},
		{"order 415-555-26710 and 415-555-2671-9", nil},
		// credit cards
		{"card 4111 1111 1111 1111 exp", []found{{"credit_card", "4111 1111 1111 1111"}}},
		{"4111-1111-1111-1111, 5555555555554444 and amex 3782 822463 10005", []found{{"credit_card", "4111-1111-1111-1111"}, {"credit_card", "5555555555554444"}, {"credit_card", "3782 822463 10005"}}},
		{"not luhn 4111111111111112, too long 41111111111111111111111, ts 1712345678901234567", nil},
		// IBAN
		{"IBAN DE89370400440532013000 or GB82 WEST 1234 5698 7654 32.", []found{{"iban", "DE89370400440532013000"}, {"iban", "GB82 WEST 1234 5698 7654 32"}}},
		{"bad DE89370400440532013001, XX89370400440532013000, DE8937040044053201300", nil},
		// IP
		{"hosts 192.168.1.10 and 10.0.0.1.", []found{{"ipv4", "192.168.1.10"}, {"ipv4", "10.0.0.1"}}},
		{"256.1.1.1 1.2.3 1.2.3.4.5 01.2.3.4", nil},
		{"v6 2001:db8::8a2e:370:7334, fe80::1 and 2001:0db8:85a3:0000:0000:8a2e:0370:7334 ::ffff:192.0.2.1", []found{
			{"ipv6", "2001:db8::8a2e:370:7334"}, {"ipv6", "fe80::1"}, {"ipv6", "2001:0db8:85a3:0000:0000:8a2e:0370:7334"}, {"ipv6", "::ffff:192.0.2.1"}}},
		{"std::vector<int> a::b::c 12:30 1:2:3:4:5:6:7:8:9 de:ad:be:ef 00:1A:2B:3C:4D:5E Note: ok", nil},
		// SSN
		{"ssn 123-45-6789.", []found{{"ssn", "123-45-6789"}}},
		{"000-12-3456 666-12-3456 900-12-3456 123-00-4567 123-45-0000 123-45-67890", nil},
		// private keys
		// 64 hex digits: a key, a hash or unclear, by context (hexctx.go)
		{"private key " + privKey + " and PRIVATE_KEY=0x" + privKey, []found{{"eth_private_key", privKey}, {"eth_private_key", "0x" + privKey}}},
		{"my key is 0x" + privKey + "; sign with " + privKey + ". 0x" + privKey + " is my private key",
			[]found{{"eth_private_key", "0x" + privKey}, {"eth_private_key", privKey}, {"eth_private_key", "0x" + privKey}}},
		{"DEPLOYER_PK=" + privKey + "\nseed: 0x" + privKey + `, "privateKey": "0x` + privKey + `"`,
			[]found{{"eth_private_key", privKey}, {"eth_private_key", "0x" + privKey}, {"eth_private_key", "0x" + privKey}}},
		{"key " + privKey + " and 0x" + privKey + " | " + privKey, []found{{"hex64", privKey}, {"hex64", "0x" + privKey}, {"hex64", privKey}}},
		{"tx 0x" + privKey + " confirmed; txHash: 0x" + privKey + " https://etherscan.io/tx/0x" + privKey +
			" block hash 0x" + privKey + ", storage slot " + privKey + " image@sha256:" + privKey +
			` {"transactionHash":"0x` + privKey + `","blockHash":"0x` + privKey + `"} topics[0] = 0x` + privKey, nil},
		// The clause decides: "private key" earlier in the sentence does not
		// make the hash a key, a hash member does not make the key a hash.
		{"Signed it with my private key; tx hash 0x" + privKey + ` {"txHash":"0x` + privKey + `","privateKey":"0x` + privKey + `"}`,
			[]found{{"eth_private_key", "0x" + privKey}}},
		{"address 0x52908400098527886E0F7030069857D2E4169EE7, hash " + privKey + "ab, " + strings.Repeat("1", 64), nil},
		// mnemonics
		{"seed: " + mnemonic + ".", []found{{"mnemonic", mnemonic}}},
		{"1. legal 2. winner 3. thank 4. year 5. wave 6. sausage 7. worth 8. useful 9. legal 10. winner 11. thank 12. yellow",
			[]found{{"mnemonic", "legal 2. winner 3. thank 4. year 5. wave 6. sausage 7. worth 8. useful 9. legal 10. winner 11. thank 12. yellow"}}},
		{"abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about", nil}, // 11 words
		{"The quick brown fox jumps over the lazy dog while seven happy zebra admire ancient ocean", nil},
	}
	for _, c := range cases {
		got := scanAll(t, c.in)
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%q:\n got %v\nwant %v", c.in, got, c.want)
		}
	}
}

func TestDetectMnemonicChecksum(t *testing.T) {
	plugintest.New(t, `{}`)
	d := detector{checksum: true}
	d.on[kMnemonic] = true
	valid := "legal winner thank year wave sausage worth useful legal winner thank yellow"
	invalid := "legal winner thank year wave sausage worth useful legal winner thank thank"
	if sp := d.scan("x "+valid+" y", nil); len(sp) != 1 {
		t.Errorf("valid mnemonic: %v", sp)
	}
	if sp := d.scan(invalid, nil); len(sp) != 0 {
		t.Errorf("bad checksum flagged with mnemonic_checksum: %v", sp)
	}
	d.checksum = false
	if sp := d.scan(invalid, nil); len(sp) != 1 {
		t.Errorf("without checksum any 12 wordlist words count: %v", sp)
	}
	// 24 words: the test vector "zoo … vote".
	z := strings.Repeat("zoo ", 23) + "vote"
	d.checksum = true
	if sp := d.scan(z, nil); len(sp) != 1 || sp[0].end-sp[0].start != len(z) {
		t.Errorf("24-word mnemonic: %v", sp)
	}
}

func TestWordlist(t *testing.T) {
	sum := sha256.Sum256([]byte(bip39English))
	if got := hex.EncodeToString(sum[:]); got != "2f5eed53a4727b4bf8880d8f3f199efc90e58503646d9ff8eff3a2ed3b24dbda" {
		t.Fatalf("wordlist sha256 = %s", got)
	}
	initWordlist()
	if len(bip39Words) != 2048 {
		t.Fatalf("%d words", len(bip39Words))
	}
	for i, w := range bip39Words {
		if got := bip39Index(w); got != i {
			t.Fatalf("bip39Index(%q) = %d, want %d", w, got, i)
		}
		if got := bip39Index(strings.ToUpper(w)); got != i {
			t.Fatalf("bip39Index(%q) = %d, want %d", strings.ToUpper(w), got, i)
		}
	}
	for _, w := range []string{"the", "abandonx", "abando", "zo", "zooo", "actor1", "acti"} {
		if got := bip39Index(w); got != -1 {
			t.Errorf("bip39Index(%q) = %d", w, got)
		}
	}
}

func TestLuhnAndPlaceholderGrammar(t *testing.T) {
	for s, want := range map[string]bool{"4111111111111111": true, "4111111111111112": false, "378282246310005": true, "79927398713": true} {
		if luhn(s) != want {
			t.Errorf("luhn(%s) != %v", s, want)
		}
	}
	for s, want := range map[string]bool{"[EMAIL_1]": true, "[PRIVATE_KEY_12]": true, "[A_1]": true,
		"[EMAIL_01]": false, "[EMAIL_]": false, "[EMAIL]": false, "[email_1]": false, "[EMAIL_1": false, "[_1]": false, "[EMAIL_1A]": false, "[REDACTED_EMAIL]": false} {
		if got := placeholderAt(s, 0) == len(s); got != want {
			t.Errorf("placeholderAt(%q) = %v, want %v", s, got, want)
		}
	}
}

// refMnemonics finds mnemonics the slow way: every word of the text, in
// order, linked when only separators lie between them.
func refMnemonics(s string) [][2]int {
	var out [][2]int
	runStart, runEnd, count, prevEnd := -1, -1, 0, -1
	flush := func() {
		if count >= 12 {
			out = append(out, [2]int{runStart, runEnd})
		}
		runStart, count = -1, 0
	}
	for i := 0; i < len(s); {
		if cls[s[i]]&cAlpha == 0 {
			i++
			continue
		}
		j := i
		for j < len(s) && cls[s[j]]&cAlpha != 0 {
			j++
		}
		ok := j-i >= 3 && j-i <= 8 && (i == 0 || !isWord(s[i-1])) && (j == len(s) || !isWord(s[j])) && bip39Index(s[i:j]) >= 0
		switch {
		case !ok:
			flush()
		case count > 0 && sepForward(s, prevEnd) == i:
			count, runEnd = count+1, j
		default:
			flush()
			runStart, runEnd, count = i, j, 1
		}
		prevEnd = j
		i = j
	}
	flush()
	return out
}

// The probing detector finds exactly the mnemonics a word-by-word scan
// finds, on texts mixing wordlist words, other words and separators.
func TestMnemonicProbesMatchReference(t *testing.T) {
	plugintest.New(t, `{}`)
	list := []string{"abandon", "zoo", "act", "Legal", "winner", "thank", "year", "wave", "sausage", "worth", "useful", "yellow"}
	other := []string{"the", "quickly", "x", "blockchain", "ab12", "foo_bar"}
	seps := []string{" ", " ", " ", "  ", "\n", ", ", " 3. ", " 12) ", ". ", " - ", "\t", ""}
	rng := uint64(1)
	next := func(n int) int {
		rng ^= rng << 13
		rng ^= rng >> 7
		rng ^= rng << 17
		return int(rng % uint64(n))
	}
	var d detector
	d.on[kMnemonic] = true
	for iter := 0; iter < 3000; iter++ {
		var sb strings.Builder
		for w := next(80); w > 0; w-- {
			if next(10) < 8 {
				sb.WriteString(list[next(len(list))])
			} else {
				sb.WriteString(other[next(len(other))])
			}
			sb.WriteString(seps[next(len(seps))])
		}
		s := sb.String()
		var got [][2]int
		for _, sp := range d.scan(s, nil) {
			got = append(got, [2]int{sp.start, sp.end})
		}
		if want := refMnemonics(s); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%q:\n got %v\nwant %v", s, got, want)
		}
	}
}

// Every entity is found wherever it falls relative to the scanner's
// eight-byte words, among the numbers of prose.
func TestDetectAtEveryAlignment(t *testing.T) {
	plugintest.New(t, `{}`)
	values := []found{
		{"email", "john.doe+tag@example.co.uk"}, {"phone", "+1 415 555 2671"}, {"phone", "(415) 555-2671"},
		{"phone", "415.555.2671"}, {"phone", "1-800-555-0199"}, {"phone", "+49 (30) 123456"},
		{"credit_card", "4111 1111 1111 1111"}, {"credit_card", "5555555555554444"}, {"credit_card", "3782 822463 10005"},
		{"iban", "DE89370400440532013000"}, {"iban", "GB82 WEST 1234 5698 7654 32"}, {"ipv4", "10.0.0.1"},
		{"ipv6", "2001:db8::8a2e:370:7334"}, {"ipv6", "fe80::1"}, {"ipv6", "::ffff:192.0.2.1"}, {"ssn", "123-45-6789"},
		{"hex64", privKey}, {"hex64", "0x" + privKey}, {"mnemonic", mnemonic},
	}
	fillers := []string{"", "a", "12", "x 1", "n 1.5 ", "up 20% ", "sum 125,000 ", "on 2024-03-18 ", "(", "+", "at 14:05 "}
	for _, v := range values {
		for pad := 0; pad < 16; pad++ {
			for _, f := range fillers {
				in := strings.Repeat("z", pad) + " " + f + " " + v.value + " and 41,000 more"
				got := scanAll(t, in)
				ok := false
				for _, g := range got {
					ok = ok || g.kind == v.kind && strings.Contains(g.value, v.value)
				}
				if !ok {
					t.Fatalf("%q: got %v, want %v", in, got, v)
				}
			}
		}
	}
}
