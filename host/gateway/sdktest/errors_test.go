package sdktest

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	anthropicoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	openaioption "github.com/openai/openai-go/v3/option"

	"github.com/bardoinference/bardo/host/fakeupstream"
)

// An upstream 429 reaches either SDK as its typed API error, status 429,
// with the dialect's rate-limit error and the upstream's Retry-After. The
// retry-after is beyond the gateway's retry cap (Gateway.MaxRetryAfter, 2 s),
// and each model has one provider, so the gateway neither retries nor fails
// over: the 429 is the answer.
func TestRateLimitedThroughSDKs(t *testing.T) {
	const retryAfter = 30
	e := newEnv(t, "")
	for _, u := range upstreams {
		for _, stream := range []bool{false, true} {
			mode := "json"
			if stream {
				mode = "stream"
			}
			t.Run("openai-client/"+u.name+"/"+mode, func(t *testing.T) {
				e.fake.Script(fakeupstream.RateLimited(retryAfter))
				params := openai.ChatCompletionNewParams{
					Model:    u.model,
					Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")},
				}
				var err error
				if stream {
					s := e.oa.Chat.Completions.NewStreaming(ctx(t), params)
					for s.Next() {
						t.Errorf("a chunk from a rate-limited request: %s", s.Current().RawJSON())
					}
					err = s.Err()
					s.Close()
				} else {
					_, err = e.oa.Chat.Completions.New(ctx(t), params)
				}
				var apiErr *openai.Error
				if !errors.As(err, &apiErr) {
					t.Fatalf("error %v (%T), want *openai.Error", err, err)
				}
				if apiErr.StatusCode != http.StatusTooManyRequests {
					t.Errorf("status = %d, want 429", apiErr.StatusCode)
				}
				if apiErr.Code != "rate_limit_exceeded" && apiErr.Type != "rate_limit_error" {
					t.Errorf("error type %q code %q, want a rate-limit error: %s", apiErr.Type, apiErr.Code, apiErr.RawJSON())
				}
				if apiErr.Message == "" {
					t.Errorf("no message: %s", apiErr.RawJSON())
				}
				if got := apiErr.Response.Header.Get("Retry-After"); got != strconv.Itoa(retryAfter) {
					t.Errorf("Retry-After = %q, want %d", got, retryAfter)
				}
				checkNoKeyLeak(t, apiErr.RawJSON())
				if e.fake.Pending() != 0 {
					t.Errorf("the scripted 429 was not consumed")
				}
			})
			t.Run("anthropic-client/"+u.name+"/"+mode, func(t *testing.T) {
				e.fake.Script(fakeupstream.RateLimited(retryAfter))
				params := anthropic.MessageNewParams{
					Model:     anthropic.Model(u.model),
					MaxTokens: 64,
					Messages:  []anthropic.MessageParam{userText("hello")},
				}
				var err error
				if stream {
					s := e.an.Messages.NewStreaming(ctx(t), params)
					for s.Next() {
						t.Errorf("an event from a rate-limited request: %s", s.Current().RawJSON())
					}
					err = s.Err()
					s.Close()
				} else {
					_, err = e.an.Messages.New(ctx(t), params)
				}
				var apiErr *anthropic.Error
				if !errors.As(err, &apiErr) {
					t.Fatalf("error %v (%T), want *anthropic.Error", err, err)
				}
				if apiErr.StatusCode != http.StatusTooManyRequests {
					t.Errorf("status = %d, want 429", apiErr.StatusCode)
				}
				if apiErr.Type() != "rate_limit_error" {
					t.Errorf("error type %q, want rate_limit_error: %s", apiErr.Type(), apiErr.RawJSON())
				}
				if got := apiErr.Response.Header.Get("Retry-After"); got != strconv.Itoa(retryAfter) {
					t.Errorf("Retry-After = %q, want %d", got, retryAfter)
				}
				checkNoKeyLeak(t, apiErr.RawJSON())
			})
		}
	}
}

func checkNoKeyLeak(t *testing.T, body string) {
	t.Helper()
	if strings.Contains(body, upKey) {
		t.Errorf("the upstream key leaked into an error: %s", body)
	}
}

// A request the gateway cannot accept is answered 400 in the caller's
// dialect, before any upstream call.
func TestBadRequestThroughSDKs(t *testing.T) {
	e := newEnv(t, "")
	openaiCase := func(name string, params openai.ChatCompletionNewParams, opts ...openaioption.RequestOption) {
		t.Run("openai-client/"+name, func(t *testing.T) {
			before := len(e.fake.Requests())
			_, err := e.oa.Chat.Completions.New(ctx(t), params, opts...)
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) {
				t.Fatalf("error %v (%T), want *openai.Error", err, err)
			}
			if apiErr.StatusCode != http.StatusBadRequest || apiErr.Type != "invalid_request_error" || apiErr.Message == "" {
				t.Errorf("status %d type %q message %q, want 400 invalid_request_error: %s", apiErr.StatusCode, apiErr.Type, apiErr.Message, apiErr.RawJSON())
			}
			if n := len(e.fake.Requests()); n != before {
				t.Errorf("a bad request reached the upstream")
			}
		})
	}
	openaiCase("empty-messages", openai.ChatCompletionNewParams{Model: openaiUp.model, Messages: []openai.ChatCompletionMessageParamUnion{}})
	openaiCase("no-model", openai.ChatCompletionNewParams{Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}},
		openaioption.WithJSONDel("model"))

	anthropicCase := func(name, field string) {
		t.Run("anthropic-client/"+name, func(t *testing.T) {
			before := len(e.fake.Requests())
			_, err := e.an.Messages.New(ctx(t), anthropic.MessageNewParams{
				Model:     anthropic.Model(anthropicUp.model),
				MaxTokens: 64,
				Messages:  []anthropic.MessageParam{userText("hi")},
			}, anthropicoption.WithJSONDel(field)) // the SDK's types cannot leave these out
			var apiErr *anthropic.Error
			if !errors.As(err, &apiErr) {
				t.Fatalf("error %v (%T), want *anthropic.Error", err, err)
			}
			if apiErr.StatusCode != http.StatusBadRequest || apiErr.Type() != "invalid_request_error" {
				t.Errorf("status %d type %q, want 400 invalid_request_error: %s", apiErr.StatusCode, apiErr.Type(), apiErr.RawJSON())
			}
			if !strings.Contains(apiErr.RawJSON(), field) {
				t.Errorf("the error does not name %s: %s", field, apiErr.RawJSON())
			}
			if n := len(e.fake.Requests()); n != before {
				t.Errorf("a bad request reached the upstream")
			}
		})
	}
	anthropicCase("no-max-tokens", "max_tokens")
	anthropicCase("no-model", "model")
}

// An upstream stream that breaks off ends with an error the SDK reports,
// never as a silently shortened success.
func TestStreamCutThroughSDKs(t *testing.T) {
	e := newEnv(t, "")
	const prompt = "a b c d e f g h i j k l m n o p q r s t"
	for _, u := range upstreams {
		t.Run("openai-client/"+u.name, func(t *testing.T) {
			e.fake.Script(fakeupstream.CutAfter(3))
			acc, _, _, _, err := streamOA(t, e, openai.ChatCompletionNewParams{
				Model:    u.model,
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)},
			})
			if err == nil {
				t.Fatalf("a cut stream ended without an error; accumulated %+v", acc.Choices)
			}
			if !strings.Contains(err.Error(), "broke off") {
				t.Errorf("error = %v, want the gateway's broke-off error", err)
			}
			if len(acc.Choices) == 1 && acc.Choices[0].FinishReason != "" {
				t.Errorf("a cut stream reported finish_reason %q", acc.Choices[0].FinishReason)
			}
		})
		t.Run("anthropic-client/"+u.name, func(t *testing.T) {
			e.fake.Script(fakeupstream.CutAfter(3))
			msg, types, _, err := streamAN(t, e, anthropic.MessageNewParams{
				Model:     anthropic.Model(u.model),
				MaxTokens: 256,
				Messages:  []anthropic.MessageParam{userText(prompt)},
			})
			if err == nil {
				t.Fatalf("a cut stream ended without an error; events %v", types)
			}
			if !strings.Contains(err.Error(), "broke off") {
				t.Errorf("error = %v, want the gateway's broke-off error", err)
			}
			if msg.StopReason != "" {
				t.Errorf("a cut stream reported stop_reason %q", msg.StopReason)
			}
		})
	}
}
