// Package dec holds typed field readers shared by the dialect codecs: they
// turn raw JSON values into Go values and report mistakes as
// *dialect.FormatError with the field's JSON path.
package dec

import (
	"errors"
	"strconv"
	"strings"

	"github.com/bardoinference/bardo/host/dialect"
	"github.com/bardoinference/bardo/host/dialect/internal/jsonx"
	"github.com/bardoinference/bardo/sdk/wire"
)

// D reads fields of a request (Kind = dialect.ErrInvalidRequest) or of an
// upstream response (Kind = dialect.ErrInvalidResponse).
type D struct {
	Kind error
	// Strict makes Validate refuse invalid UTF-8 in strings and duplicated
	// object keys (jsonx.ValidateStrict): a caller's body must mean one
	// thing. Upstream responses are read as leniently as before.
	Strict bool
}

// Request and Response are the two readers.
var (
	Request  = D{Kind: dialect.ErrInvalidRequest, Strict: true}
	Response = D{Kind: dialect.ErrInvalidResponse}
)

// Errf returns a *dialect.FormatError.
func (d D) Errf(field, msg string) error {
	return &dialect.FormatError{Kind: d.Kind, Field: field, Msg: msg}
}

func (d D) typeErr(field string, v []byte, want string) error {
	return d.Errf(field, "must be "+want+", got "+jsonx.KindOf(v).String())
}

// Validate checks that body is one JSON object.
func (d D) Validate(body []byte, what string) error {
	validate := jsonx.Validate
	if d.Strict {
		validate = jsonx.ValidateStrict
	}
	if err := validate(body); err != nil {
		return d.Errf("", err.Error())
	}
	if jsonx.KindOf(body) != jsonx.Object {
		return d.Errf("", what+" must be a JSON object")
	}
	return nil
}

// Str reads a string; null or absent (v == nil) reads as "".
func (d D) Str(field string, v []byte) (string, error) {
	if v == nil {
		return "", nil
	}
	switch jsonx.KindOf(v) {
	case jsonx.String:
		s, err := jsonx.Unquote(v)
		if err != nil {
			return "", d.Errf(field, err.Error())
		}
		return s, nil
	case jsonx.Null:
		return "", nil
	}
	return "", d.typeErr(field, v, "a string")
}

// Int reads an integer.
func (d D) Int(field string, v []byte) (int64, error) {
	if jsonx.KindOf(v) != jsonx.Number {
		return 0, d.typeErr(field, v, "an integer")
	}
	n, err := jsonx.ParseInt(v)
	if err != nil {
		return 0, d.Errf(field, "must be an integer")
	}
	return n, nil
}

// Float reads a number.
func (d D) Float(field string, v []byte) (float64, error) {
	if jsonx.KindOf(v) != jsonx.Number {
		return 0, d.typeErr(field, v, "a number")
	}
	f, err := jsonx.ParseFloat(v)
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange) {
			return 0, d.Errf(field, "number out of range")
		}
		return 0, d.Errf(field, "must be a number")
	}
	return f, nil
}

// Bool reads a boolean; null or absent reads as false.
func (d D) Bool(field string, v []byte) (bool, error) {
	if v == nil || jsonx.IsNull(v) {
		return false, nil
	}
	b, err := jsonx.ParseBool(v)
	if err != nil {
		return false, d.typeErr(field, v, "a boolean")
	}
	return b, nil
}

// Object checks that v is an object.
func (d D) Object(field string, v []byte) error {
	if jsonx.KindOf(v) != jsonx.Object {
		return d.typeErr(field, v, "an object")
	}
	return nil
}

// Array checks that v is an array.
func (d D) Array(field string, v []byte) error {
	if jsonx.KindOf(v) != jsonx.Array {
		return d.typeErr(field, v, "an array")
	}
	return nil
}

// Strings reads a string or an array of strings (as OpenAI's stop accepts);
// null reads as nil.
func (d D) Strings(field string, v []byte, allowSingle bool) ([]string, error) {
	switch jsonx.KindOf(v) {
	case jsonx.Null:
		return nil, nil
	case jsonx.String:
		if allowSingle {
			s, err := d.Str(field, v)
			return []string{s}, err
		}
	case jsonx.Array:
		var out []string
		err := jsonx.ArrayEach(v, func(i int, e []byte) error {
			if jsonx.KindOf(e) != jsonx.String {
				return d.typeErr(field+"["+strconv.Itoa(i)+"]", e, "a string")
			}
			s, err := d.Str(field, e)
			out = append(out, s)
			return err
		})
		return out, err
	}
	if allowSingle {
		return nil, d.typeErr(field, v, "a string or an array of strings")
	}
	return nil, d.typeErr(field, v, "an array of strings")
}

// Prefix prepends a path element to the field of a *dialect.FormatError.
func Prefix(err error, p string) error {
	var fe *dialect.FormatError
	if !errors.As(err, &fe) {
		return err
	}
	switch {
	case fe.Field == "":
		fe.Field = p
	case strings.HasPrefix(fe.Field, "["):
		fe.Field = p + fe.Field
	default:
		fe.Field = p + "." + fe.Field
	}
	return err
}

// Index formats "name[i]".
func Index(name string, i int) string { return name + "[" + strconv.Itoa(i) + "]" }

// Key returns the decoded object key (raw keys without escapes are converted
// without decoding).
func Key(raw []byte) string { return jsonx.KeyString(raw) }

// AppendMember appends ,"rawkey":val to an object being built in dst (which
// starts with '{'); rawKey is still JSON-escaped.
func AppendMember(dst, rawKey, val []byte) []byte {
	if len(dst) == 0 {
		dst = append(dst, '{')
	} else {
		dst = append(dst, ',')
	}
	dst = append(dst, '"')
	dst = append(dst, rawKey...)
	dst = append(dst, '"', ':')
	return append(dst, val...)
}

// CloseObject terminates an object built with AppendMember (nil stays nil).
func CloseObject(dst []byte) []byte {
	if dst == nil {
		return nil
	}
	return append(dst, '}')
}

// K returns the key bytes to switch on: raw keys without escapes as they are,
// escaped ones decoded.
func K(raw []byte) []byte {
	for _, c := range raw {
		if c == '\\' {
			return []byte(jsonx.KeyString(raw))
		}
	}
	return raw
}

// Tools decodes the "tools" array of a request with the dialect's one-tool
// decoder; a tool the decoder skips (ok false: a kind the canonical model
// does not carry) is left out. Errors name the tool's index.
func (d D) Tools(req *wire.Request, val []byte, decodeTool func(raw []byte) (wire.Tool, bool, error)) error {
	if err := d.Array("tools", val); err != nil {
		return err
	}
	return jsonx.ArrayEach(val, func(i int, raw []byte) error {
		t, ok, err := decodeTool(raw)
		if err != nil {
			return Prefix(err, Index("tools", i))
		}
		if ok {
			req.Tools = append(req.Tools, t)
		}
		return nil
	})
}
