package routing

import "errors"

// Quality is a quality level. On an intent it is a floor: the resolver only
// picks models rated at that level or above (pass 2 allows one level below,
// reported as degraded). On a model it is the highest intent level the
// catalog owner trusts it with.
type Quality uint8

// Quality levels, lowest first. The zero value is "unset": an intent without
// a level has no floor; a model without a rating counts as Medium (see
// ModelInfo.Level).
const (
	QualityUnset Quality = iota
	Minimum
	Low
	Medium
	High
	Maximum
)

var qualityNames = [...]string{"unset", "minimum", "low", "medium", "high", "maximum"}

// String returns the level's wire name ("minimum" … "maximum").
func (q Quality) String() string {
	if int(q) < len(qualityNames) {
		return qualityNames[q]
	}
	return "unknown"
}

// Downgrade returns the next level down; Low and Minimum stay where they are
// (the spec's mortality downgrade: Maximum→High→Medium→Low).
func (q Quality) Downgrade() Quality {
	if q > Low {
		return q - 1
	}
	return q
}

// ErrUnknownName is returned (wrapped in a NameError) for an enum name that
// does not parse.
var ErrUnknownName = errors.New("unknown name")

// ParseQuality parses a level name ("minimum", "min", "low", "medium", "high",
// "maximum", "max"), ignoring ASCII case.
func ParseQuality(s string) (Quality, error) {
	for q := Minimum; q <= Maximum; q++ {
		if nameEq(qualityNames[q], s) {
			return q, nil
		}
	}
	switch {
	case nameEq("max", s):
		return Maximum, nil
	case nameEq("min", s):
		return Minimum, nil
	}
	return QualityUnset, &NameError{Kind: "quality", Name: s, Err: ErrUnknownName}
}

// MarshalText implements encoding.TextMarshaler.
func (q Quality) MarshalText() ([]byte, error) { return []byte(q.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler (JSON and TOML
// strings); "" and "unset" decode to QualityUnset, as MarshalText writes it.
func (q *Quality) UnmarshalText(b []byte) error {
	if len(b) == 0 || nameEq("unset", string(b)) {
		*q = QualityUnset
		return nil
	}
	v, err := ParseQuality(string(b))
	if err != nil {
		return err
	}
	*q = v
	return nil
}

// SecurityClass restricts which providers may see a request. Every class
// above Standard routes only to providers with the Private trait and fails
// closed: it is never relaxed by pass 2.
type SecurityClass uint8

// Security classes (the Venice privacy tiers).
const (
	Standard SecurityClass = iota // any provider
	Private                       // zero-retention providers only
	TEEOnly                       // private providers, models with the tee feature
	E2EEOnly                      // private providers, models with the e2ee feature
)

var securityNames = [...]string{"standard", "private", "tee", "e2ee"}

// String returns the class's wire name.
func (c SecurityClass) String() string {
	if int(c) < len(securityNames) {
		return securityNames[c]
	}
	return "unknown"
}

// ParseSecurityClass parses "standard", "private", "tee" or "e2ee" (also
// "public"/"" for standard), ignoring ASCII case.
func ParseSecurityClass(s string) (SecurityClass, error) {
	if s == "" || nameEq("public", s) {
		return Standard, nil
	}
	for c := range securityNames {
		if nameEq(securityNames[c], s) {
			return SecurityClass(c), nil
		}
	}
	return Standard, &NameError{Kind: "security class", Name: s, Err: ErrUnknownName}
}

// required returns the model features the class makes mandatory.
func (c SecurityClass) required() FeatureSet {
	switch c {
	case TEEOnly:
		return Features(TEE)
	case E2EEOnly:
		return Features(E2EE)
	}
	return 0
}

// MarshalText implements encoding.TextMarshaler.
func (c SecurityClass) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (c *SecurityClass) UnmarshalText(b []byte) error {
	v, err := ParseSecurityClass(string(b))
	if err != nil {
		return err
	}
	*c = v
	return nil
}

// PaymentMode is how a provider is paid.
type PaymentMode uint8

// Payment modes (spec: ProviderTraits.payment).
const (
	PaymentUnset   PaymentMode = iota
	PaymentX402                // USDC on Base via x402
	PaymentPrepaid             // prepaid API credits (the operator's float)
	PaymentAPIKey              // the owner's own key: the cost is on the owner's bill, not Bardo's ledger
	PaymentDiem                // Venice DIEM staking: zero marginal cost when the caller holds DIEM
	PaymentWallet              // the agent's wallet pays from earned revenue (Bankr)
)

var paymentNames = [...]string{"", "x402", "prepaid", "api_key", "diem", "wallet"}

// String returns the mode's wire name.
func (m PaymentMode) String() string {
	if int(m) < len(paymentNames) {
		return paymentNames[m]
	}
	return "unknown"
}

// MarshalText implements encoding.TextMarshaler.
func (m PaymentMode) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler ("" is PaymentUnset).
func (m *PaymentMode) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*m = PaymentUnset
		return nil
	}
	for i := range paymentNames {
		if i > 0 && nameEq(paymentNames[i], string(b)) {
			*m = PaymentMode(i)
			return nil
		}
	}
	return &NameError{Kind: "payment mode", Name: string(b), Err: ErrUnknownName}
}

// ParamStyle says how a provider takes inference parameters (the columns of
// the spec's provider parameter mapping table). See MapProfile.
type ParamStyle uint8

// Parameter styles.
const (
	// StyleByFamily picks the style from the model's family: Anthropic
	// models take Anthropic parameters, OpenAI models OpenAI ones, Gemini
	// models Gemini ones, anything else the generic OpenAI-compatible set.
	// Gateways that pass requests through to the model's vendor (BlockRun,
	// Bankr, Direct keys) use it.
	StyleByFamily ParamStyle = iota
	StyleVenice
	StyleAnthropic
	StyleOpenAI
	StyleOpenRouter
	StyleGemini
	StyleGeneric
)

var styleNames = [...]string{"by_family", "venice", "anthropic", "openai", "openrouter", "gemini", "generic"}

// String returns the style's wire name.
func (s ParamStyle) String() string {
	if int(s) < len(styleNames) {
		return styleNames[s]
	}
	return "unknown"
}

// MarshalText implements encoding.TextMarshaler.
func (s ParamStyle) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (s *ParamStyle) UnmarshalText(b []byte) error {
	for i := range styleNames {
		if nameEq(styleNames[i], string(b)) {
			*s = ParamStyle(i)
			return nil
		}
	}
	return &NameError{Kind: "parameter style", Name: string(b), Err: ErrUnknownName}
}

// StyleFor resolves StyleByFamily for one model: family is the catalog's
// family ("anthropic", "openai", "google", ...); when it is empty the model
// id's vendor prefix decides (claude → anthropic, gpt/o1/o3/o4 → openai,
// gemini → google). These are family names, not model ids.
func StyleFor(style ParamStyle, family, model string) ParamStyle {
	if style != StyleByFamily {
		return style
	}
	if family == "" {
		family = familyOf(model)
	}
	switch {
	case nameEq("anthropic", family) || nameEq("claude", family):
		return StyleAnthropic
	case nameEq("openai", family) || nameEq("gpt", family):
		return StyleOpenAI
	case nameEq("google", family) || nameEq("gemini", family):
		return StyleGemini
	}
	return StyleGeneric
}

// familyOf guesses a vendor family from a model id's leading word, after
// any "vendor/" prefix.
func familyOf(model string) string {
	for i := len(model) - 1; i >= 0; i-- {
		if model[i] == '/' {
			model = model[i+1:]
			break
		}
	}
	switch {
	case hasPrefixFold(model, "claude"):
		return "anthropic"
	case hasPrefixFold(model, "gpt"), hasPrefixFold(model, "o1"), hasPrefixFold(model, "o3"), hasPrefixFold(model, "o4"), hasPrefixFold(model, "chatgpt"):
		return "openai"
	case hasPrefixFold(model, "gemini"):
		return "google"
	}
	return ""
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && nameEq(prefix, s[:len(prefix)])
}
