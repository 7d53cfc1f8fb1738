package config

import (
	"fmt"
	"net/url"
	"sort"
	"strings"
)

// Telemetry holds the [telemetry] table: OpenTelemetry traces exported over
// OTLP/HTTP (host/telemetry/trace). Off unless the table sets an endpoint
// and enabled is not false.
type Telemetry struct {
	Enabled bool
	// Endpoint is the OTLP/HTTP base URL (http://collector:4318); spans go
	// to its /v1/traces unless the URL names another path.
	Endpoint string
	// Headers are sent with every export (a vendor's API key): values are
	// "env:NAME" references, resolved at start, never literal secrets.
	Headers map[string]string
	// SampleRatio is the share of new traces kept, 0..1 (default 1); a
	// caller's traceparent decides for its own trace (parent-based).
	SampleRatio float64
	// ServiceName is the resource's service.name (default "bardo").
	ServiceName string
	// CaptureContent puts the prompt and the answer on the request span
	// (gen_ai.input.messages, gen_ai.output.messages); default false.
	CaptureContent bool
}

var telemetryKeys = []string{"enabled", "endpoint", "headers", "sample_ratio", "service_name", "capture_content"}

// DefaultServiceName is the service.name of the gateway's spans.
const DefaultServiceName = "bardo"

func (c *checker) telemetry(tree map[string]any) Telemetry {
	const p = "telemetry"
	v, ok := tree[p]
	if !ok {
		return Telemetry{} // off; the defaults below matter only when on
	}
	tel := Telemetry{SampleRatio: 1, ServiceName: DefaultServiceName}
	t, ok := v.(map[string]any)
	if !ok {
		c.errf(p, "must be a table ([telemetry]), got %s", tomlType(v))
		return tel
	}
	c.unknownKeys(t, p, telemetryKeys)
	tel.Enabled = true
	if b, ok := c.boolean(t, p, "enabled"); ok {
		tel.Enabled = b
	}
	if s, ok := c.str(t, p, "endpoint"); ok {
		if u, err := url.Parse(s); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			// The value is not repeated: a URL with credentials in it is
			// a secret.
			c.errf(joinKey(p, "endpoint"), "must be an http(s) URL without credentials (the OTLP/HTTP endpoint, e.g. http://127.0.0.1:4318)")
		} else {
			tel.Endpoint = s
		}
	} else if tel.Enabled {
		c.errf(joinKey(p, "endpoint"), "is required when [telemetry] is enabled (the OTLP/HTTP endpoint, e.g. http://127.0.0.1:4318)")
	}
	if hv, ok := t["headers"]; ok {
		ht, ok := hv.(map[string]any)
		if !ok {
			c.errf(joinKey(p, "headers"), "must be a table of header = \"env:NAME\", got %s", tomlType(hv))
		} else {
			tel.Headers = map[string]string{}
			names := make([]string, 0, len(ht))
			for k := range ht {
				names = append(names, k)
			}
			sort.Strings(names)
			for _, k := range names {
				key := joinKey(joinKey(p, "headers"), k)
				s, isStr := ht[k].(string)
				switch {
				case !isStr:
					c.errf(key, "must be a string \"env:NAME\", got %s", tomlType(ht[k]))
				case strings.ContainsAny(k, " :\r\n") || k == "":
					c.errf(key, "is not a valid header name")
				case !strings.HasPrefix(s, "env:") || !envNameRE.MatchString(s[len("env:"):]):
					// Never repeat the value: it may be the secret itself.
					c.errf(key, "must be an \"env:NAME\" reference (a header's value is a secret and is never written in the file)")
				default:
					tel.Headers[k] = s
				}
			}
		}
	}
	if rv, ok := t["sample_ratio"]; ok {
		var r float64
		switch n := rv.(type) {
		case float64:
			r = n
		case int64:
			r = float64(n)
		default:
			c.errf(joinKey(p, "sample_ratio"), "must be a number from 0 to 1, got %s", tomlType(rv))
			r = 1
		}
		if r < 0 || r > 1 || r != r {
			c.errf(joinKey(p, "sample_ratio"), "must be from 0 to 1, got %s", fmt.Sprint(rv))
		} else {
			tel.SampleRatio = r
		}
	}
	if s, ok := c.str(t, p, "service_name"); ok {
		if strings.TrimSpace(s) == "" {
			c.errf(joinKey(p, "service_name"), "must not be empty")
		} else {
			tel.ServiceName = s
		}
	}
	tel.CaptureContent, _ = c.boolean(t, p, "capture_content")
	if !tel.Enabled {
		tel.Endpoint = ""
	}
	return tel
}

// ResolveTelemetryHeaders resolves the [telemetry] headers' env:
// references. A reference to an unset variable is an error naming the
// variable, never its value.
func ResolveTelemetryHeaders(t Telemetry, getenv func(string) string) (map[string]string, error) {
	out := make(map[string]string, len(t.Headers))
	for k, ref := range t.Headers {
		v, ok, err := ResolveCredential(ref, getenv)
		if err != nil {
			return nil, fmt.Errorf("telemetry.headers.%s: %w", k, err)
		}
		if !ok {
			return nil, fmt.Errorf("telemetry.headers.%s: environment variable %s is not set", k, strings.TrimPrefix(ref, "env:"))
		}
		out[k] = v
	}
	return out, nil
}
