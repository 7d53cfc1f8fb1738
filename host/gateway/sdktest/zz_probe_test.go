package sdktest

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestProbe(t *testing.T) {
	e := newEnv(t, "")
	for _, c := range []struct{ path, body string }{
		{"/v1/chat/completions", `{"model":"claude-sonnet-4-5","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"w fake:tool=get_weather"}],"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}]}`},
	} {
		req, _ := http.NewRequest("POST", e.gw.URL+c.path, strings.NewReader(c.body))
		req.Header.Set("content-type", "application/json")
		req.Header.Set("anthropic-version", "2023-06-01")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		t.Logf("%d %s\n%s\nUPSTREAM %s", resp.StatusCode, resp.Header, b, e.fake.Last().Body)
	}
}
