package main

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Gemini's `parameters` and `responseSchema` take an OpenAPI 3.0 subset, not
// JSON Schema: an unknown key ("$schema", "additionalProperties", …) is a 400.
// sanitizeSchema keeps the keys Gemini knows and rewrites the common JSON
// Schema idioms into them (see README.md, "Tool schemas"). Key order is kept.

// schemaKeys are the Schema fields Gemini accepts, kept as they are.
var schemaKeys = map[string]bool{
	"title": true, "description": true, "pattern": true, "nullable": true,
	"minItems": true, "maxItems": true, "minLength": true, "maxLength": true,
	"minProperties": true, "maxProperties": true, "minimum": true, "maximum": true,
	"example": true, "default": true, "propertyOrdering": true,
}

// schemaFormats are the formats Gemini accepts.
var schemaFormats = map[string]bool{"date-time": true, "enum": true, "int32": true, "int64": true, "float": true, "double": true}

// maxRefDepth bounds $ref inlining (a recursive schema cannot be inlined).
const maxRefDepth = 6

// The cache holds sanitized schemas by their source: agents send the same
// tools with every request, and an instance serves many requests.
var schemaCache = map[string]json.RawMessage{}

const schemaCacheMax = 256

// parametersSchema returns a tool's `parameters`, or nil when the tool
// takes no arguments (Gemini refuses an OBJECT without properties).
func parametersSchema(raw []byte) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	return sanitizeSchema(raw, true)
}

func sanitizeSchema(raw []byte, params bool) json.RawMessage {
	key := string(raw)
	if params {
		key = "p" + key
	} else {
		key = "r" + key
	}
	if v, ok := schemaCache[key]; ok {
		return v
	}
	out := sanitizeUncached(raw, params)
	if len(schemaCache) >= schemaCacheMax {
		clear(schemaCache)
	}
	schemaCache[key] = out
	return out
}

func sanitizeUncached(raw []byte, params bool) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := decodeOrdered(dec)
	root, ok := v.(*omap)
	if err != nil || !ok {
		return nil
	}
	s := sanitizer{}
	for _, k := range []string{"$defs", "definitions"} {
		if d, ok := root.get(k).(*omap); ok {
			if s.defs == nil {
				s.defs = map[string]*omap{}
			}
			for i, name := range d.k {
				if def, ok := d.v[i].(*omap); ok {
					s.defs[k+"/"+name] = def
				}
			}
		}
	}
	out := s.clean(root)
	if params && out.get("type") == "object" && out.get("properties") == nil {
		return nil
	}
	return encodeOrdered(nil, out)
}

type sanitizer struct {
	defs  map[string]*omap
	depth int
}

func (s *sanitizer) clean(m *omap) *omap {
	if ref, ok := m.get("$ref").(string); ok {
		name := strings.TrimPrefix(ref, "#/")
		def := s.defs[name]
		if def == nil || s.depth >= maxRefDepth {
			return &omap{k: []string{"type"}, v: []any{"object"}}
		}
		s.depth++
		out := s.clean(def)
		s.depth--
		if d, ok := m.get("description").(string); ok {
			out.set("description", d)
		}
		return out
	}
	out := &omap{}
	var required []any
	nullable := false
	for i, k := range m.k {
		v := m.v[i]
		switch k {
		case "type":
			switch t := v.(type) {
			case string:
				out.set("type", t)
			case []any:
				for _, x := range t {
					if x == "null" {
						nullable = true
					} else if xs, ok := x.(string); ok && out.get("type") == nil {
						out.set("type", xs)
					}
				}
			}
		case "format":
			if f, ok := v.(string); ok && schemaFormats[f] {
				out.set("format", f)
			}
		case "enum":
			if list, ok := v.([]any); ok && len(list) > 0 && allStrings(list) {
				out.set("enum", list)
			}
		case "const":
			if c, ok := v.(string); ok {
				out.set("enum", []any{c})
			}
		case "properties":
			if props, ok := v.(*omap); ok {
				cleaned := &omap{}
				for j, name := range props.k {
					if p, ok := props.v[j].(*omap); ok {
						cleaned.set(name, s.clean(p))
					}
				}
				if len(cleaned.k) > 0 {
					out.set("properties", cleaned)
				}
			}
		case "required":
			required, _ = v.([]any)
		case "items":
			switch it := v.(type) {
			case *omap:
				out.set("items", s.clean(it))
			case []any: // tuple form: Gemini has one item schema
				if len(it) > 0 {
					if first, ok := it[0].(*omap); ok {
						out.set("items", s.clean(first))
					}
				}
			}
		case "anyOf", "oneOf":
			list, _ := v.([]any)
			var alts []any
			for _, a := range list {
				am, ok := a.(*omap)
				if !ok {
					continue
				}
				if am.get("type") == "null" && len(am.k) == 1 {
					nullable = true
					continue
				}
				alts = append(alts, s.clean(am))
			}
			switch {
			case len(alts) == 1: // Optional[X]: X itself, nullable
				out.merge(alts[0].(*omap))
			case len(alts) > 1:
				out.set("anyOf", alts)
			}
		case "allOf":
			if list, ok := v.([]any); ok && len(list) == 1 {
				if am, ok := list[0].(*omap); ok {
					out.merge(s.clean(am))
				}
			}
		default:
			if schemaKeys[k] {
				out.set(k, v)
			}
		}
	}
	if nullable {
		out.set("nullable", true)
	}
	props, _ := out.get("properties").(*omap)
	if len(required) > 0 && props != nil {
		var keep []any
		for _, r := range required {
			if name, ok := r.(string); ok && props.get(name) != nil {
				keep = append(keep, name)
			}
		}
		if len(keep) > 0 {
			out.set("required", keep)
		}
	}
	if out.get("type") == nil {
		switch {
		case props != nil:
			out.set("type", "object")
		case out.get("enum") != nil:
			out.set("type", "string")
		}
	}
	return out
}

func allStrings(list []any) bool {
	for _, x := range list {
		if _, ok := x.(string); !ok {
			return false
		}
	}
	return true
}

// omap is a JSON object that keeps its key order.
type omap struct {
	k []string
	v []any
}

func (o *omap) get(k string) any {
	for i, key := range o.k {
		if key == k {
			return o.v[i]
		}
	}
	return nil
}

func (o *omap) set(k string, v any) {
	for i, key := range o.k {
		if key == k {
			o.v[i] = v
			return
		}
	}
	o.k = append(o.k, k)
	o.v = append(o.v, v)
}

// merge copies the keys of src that o does not have.
func (o *omap) merge(src *omap) {
	for i, k := range src.k {
		if o.get(k) == nil {
			o.set(k, src.v[i])
		}
	}
}

func decodeOrdered(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := &omap{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				v, err := decodeOrdered(dec)
				if err != nil {
					return nil, err
				}
				o.k = append(o.k, k)
				o.v = append(o.v, v)
			}
			_, err := dec.Token() // '}'
			return o, err
		case '[':
			list := []any{}
			for dec.More() {
				v, err := decodeOrdered(dec)
				if err != nil {
					return nil, err
				}
				list = append(list, v)
			}
			_, err := dec.Token() // ']'
			return list, err
		}
	}
	return tok, nil
}

func encodeOrdered(b []byte, v any) []byte {
	switch t := v.(type) {
	case *omap:
		b = append(b, '{')
		for i, k := range t.k {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, k)
			b = append(b, ':')
			b = encodeOrdered(b, t.v[i])
		}
		return append(b, '}')
	case []any:
		b = append(b, '[')
		for i, x := range t {
			if i > 0 {
				b = append(b, ',')
			}
			b = encodeOrdered(b, x)
		}
		return append(b, ']')
	case string:
		return appendJSONString(b, t)
	case json.Number:
		return append(b, t...)
	case bool:
		if t {
			return append(b, "true"...)
		}
		return append(b, "false"...)
	}
	return append(b, "null"...)
}

func appendJSONString(b []byte, s string) []byte {
	q, _ := json.Marshal(s)
	return append(b, q...)
}
