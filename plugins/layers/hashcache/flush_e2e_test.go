//go:build !wasip1

package main_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/testkit/testgateway"
)

// The host's admin flush empties the cache: the next identical request is a
// miss again.
func TestAdminFlush(t *testing.T) {
	fake := fakeupstream.New(fakeupstream.WithAPIKey(upKey))
	t.Cleanup(fake.Close)
	g := testgateway.Start(t, pipeline(fake), testgateway.Options{
		Env: map[string]string{"UP_KEY": upKey}, AdminToken: "admin-secret"})
	body := openAIBody("gpt-4o", "0.2", question, false)
	post(t, g, chat, body)
	if r := post(t, g, chat, body); r.header.Get("X-Bardo-Cache") != "hash-hit" {
		t.Fatalf("no hit before the flush: %q", r.header.Get("X-Bardo-Cache"))
	}
	flush := func(body string) *http.Response {
		req, _ := http.NewRequest("POST", g.URL+"/admin/cache/flush", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer admin-secret")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	// Another tenant's flush leaves the anonymous tenant's entry.
	if resp := flush(`{"layer":"hashcache","tenant":"someone-else"}`); resp.StatusCode != 200 {
		t.Fatalf("flush: %d", resp.StatusCode)
	}
	if r := post(t, g, chat, body); r.header.Get("X-Bardo-Cache") != "hash-hit" {
		t.Fatal("another tenant's flush removed the entry")
	}
	if resp := flush(`{"layer":"hashcache","tenant":"anonymous"}`); resp.StatusCode != 200 {
		t.Fatalf("flush: %d", resp.StatusCode)
	}
	if r := post(t, g, chat, body); r.header.Get("X-Bardo-Cache") != "miss" || fake.Count(chat) != 2 {
		t.Fatalf("after the flush: %q, upstream calls %d", r.header.Get("X-Bardo-Cache"), fake.Count(chat))
	}
}
