// Command pii is pipeline layer L7: it masks personal data and secrets in
// the request before it goes upstream, and puts the originals back into the
// answer.
//
// Request phase: e-mail addresses, phone numbers, credit card numbers,
// IBANs, IPv4/IPv6 addresses, US SSNs, Ethereum private keys, BIP-39
// mnemonics and configured extra patterns are found in the system prompt,
// message text, tool results and tool-call arguments. Each kind is masked
// (replaced by a placeholder such as [EMAIL_1], the same value always by
// the same placeholder), redacted ([REDACTED_EMAIL], never restored) or
// blocks the request (400, naming the kind, never the value). Response and
// stream phases: placeholders in the answer's text and tool-call arguments
// are replaced by the originals, including placeholders split across
// stream deltas. See README.md.
package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/wire"
)

// Actions.
const (
	actOff = iota
	actMask
	actRedact
	actBlock
)

var actionNames = map[string]int{"off": actOff, "mask": actMask, "redact": actRedact, "block": actBlock}

// entity is a kind of value the layer looks for.
type entity struct {
	name   string // config name: "email", or an extra pattern's name
	tag    string // placeholder tag: "EMAIL" → [EMAIL_1], [REDACTED_EMAIL]
	label  string // for the block message
	action int
}

// builtins, indexed by the k* constants.
var builtins = [nBuiltin]entity{
	kEmail:    {"email", "EMAIL", "an e-mail address", actMask},
	kPhone:    {"phone", "PHONE", "a phone number", actMask},
	kCard:     {"credit_card", "CARD", "a credit card number", actMask},
	kIBAN:     {"iban", "IBAN", "an IBAN", actMask},
	kIPv4:     {"ipv4", "IPV4", "an IPv4 address", actMask},
	kIPv6:     {"ipv6", "IPV6", "an IPv6 address", actMask},
	kSSN:      {"ssn", "SSN", "a US social security number", actMask},
	kPrivKey:  {"eth_private_key", "PRIVATE_KEY", "an Ethereum private key", actBlock},
	kMnemonic: {"mnemonic", "MNEMONIC", "a BIP-39 mnemonic phrase", actBlock},
	kHex64:    {"hex64", "HEX64", "a 64-hex-digit value that may be a private key", actMask},
}

type patternConfig struct {
	Name   string `json:"name"`
	Regex  string `json:"regex"`
	Action string `json:"action"`
}

type rawConfig struct {
	MaskSystem       *bool             `json:"mask_system"`
	MappingTTL       json.RawMessage   `json:"mapping_ttl"`
	MnemonicChecksum bool              `json:"mnemonic_checksum"`
	Actions          map[string]string `json:"actions"`
	Patterns         []patternConfig   `json:"patterns"`
}

type config struct {
	maskSystem bool
	mappingTTL time.Duration
}

var (
	cfg       config
	entities  []entity
	customSet *plugin.RegexSet
	work      masker
)

const (
	defaultTTL = 600 * time.Second
	maxTTL     = 24 * time.Hour
)

var customName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)

// configure reads the [layer.config] table; unknown keys are errors, so a
// typo cannot silently leave a kind of data unmasked.
func configure(js []byte) error {
	var rc rawConfig
	if err := plugin.DecodeStrict(js, &rc); err != nil {
		return fmt.Errorf("pii config: %w", err)
	}
	cfg = config{maskSystem: true, mappingTTL: defaultTTL}
	if rc.MaskSystem != nil {
		cfg.maskSystem = *rc.MaskSystem
	}
	if len(rc.MappingTTL) > 0 {
		ttl, err := parseTTL(rc.MappingTTL)
		if err != nil {
			return err
		}
		cfg.mappingTTL = ttl
	}
	entities = append(entities[:0], builtins[:]...)
	for name, a := range rc.Actions {
		act, ok := actionNames[a]
		if !ok {
			return fmt.Errorf("pii config: actions.%s: unknown action %q (want mask, redact, block or off)", name, a)
		}
		found := false
		for i := range entities {
			if entities[i].name == name {
				entities[i].action, found = act, true
			}
		}
		if !found {
			return fmt.Errorf("pii config: actions.%s: unknown entity (want one of %s)", name, builtinNames())
		}
	}
	var regexes []string
	for i, p := range rc.Patterns {
		where := "pii config: patterns[" + strconv.Itoa(i) + "]"
		if !customName.MatchString(p.Name) {
			return fmt.Errorf("%s: name %q must match [a-z][a-z0-9_]{0,31}", where, p.Name)
		}
		if p.Name == "redacted" {
			return fmt.Errorf("%s: name %q is reserved", where, p.Name)
		}
		for _, e := range entities {
			if e.name == p.Name {
				return fmt.Errorf("%s: name %q is already used", where, p.Name)
			}
		}
		if p.Regex == "" {
			return fmt.Errorf("%s (%s): regex is empty", where, p.Name)
		}
		if _, err := regexp.Compile(p.Regex); err != nil {
			return fmt.Errorf("%s (%s): %v", where, p.Name, err)
		}
		act := actMask
		if p.Action != "" {
			var ok bool
			if act, ok = actionNames[p.Action]; !ok {
				return fmt.Errorf("%s (%s): unknown action %q (want mask, redact, block or off)", where, p.Name, p.Action)
			}
		}
		entities = append(entities, entity{p.Name, strings.ToUpper(p.Name), "a value matching pattern " + strconv.Quote(p.Name), act})
		regexes = append(regexes, p.Regex)
	}
	customSet = nil
	if len(regexes) > 0 {
		set, err := plugin.CompileRegexSet(regexes)
		if err != nil {
			return fmt.Errorf("pii config: patterns: %w", err)
		}
		customSet = set
	}
	work.det = detector{checksum: rc.MnemonicChecksum}
	forgetHistory()
	for i := range nBuiltin {
		work.det.on[i] = entities[i].action != actOff
	}
	return nil
}

func builtinNames() string {
	var names []string
	for _, e := range builtins {
		names = append(names, e.name)
	}
	return strings.Join(names, ", ")
}

// parseTTL reads mapping_ttl: seconds as a number, or a Go duration string.
func parseTTL(raw json.RawMessage) (time.Duration, error) {
	var ttl time.Duration
	var secs float64
	var s string
	switch {
	case json.Unmarshal(raw, &secs) == nil:
		ttl = time.Duration(secs * float64(time.Second))
	case json.Unmarshal(raw, &s) == nil:
		d, err := time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("pii config: mapping_ttl: %v", err)
		}
		ttl = d
	default:
		return 0, fmt.Errorf("pii config: mapping_ttl must be a number of seconds or a duration string")
	}
	if ttl < time.Second || ttl > maxTTL {
		return 0, fmt.Errorf("pii config: mapping_ttl must be between 1s and %s, got %s", maxTTL, ttl)
	}
	return ttl, nil
}

func init() {
	plugin.RegisterLayer(plugin.Layer{
		Name:    "pii",
		Version: "1.0.0",
		Phases:  wire.PhaseRequest | wire.PhaseResponse | wire.PhaseStream,
		Reads:   wire.PartSystem | wire.PartMessages,
		Writes:  wire.PartSystem | wire.PartMessages,
		Init: func() error {
			initWordlist()
			return configure(plugin.Config())
		},
		OnRequest:  onRequest,
		OnResponse: onResponse,
		OnStream:   onStream,
	})
}

func main() {}
