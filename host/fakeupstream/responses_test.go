package fakeupstream

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// The fake's Responses API is read by the official openai-go client: its
// wire format is what the SDK (and its stream accumulator) expects.

func respClient(s *Server) openai.Client {
	return openai.NewClient(option.WithBaseURL(s.URL()+"/v1/"), option.WithAPIKey(DefaultAPIKey),
		option.WithMaxRetries(0), option.WithRequestTimeout(10*time.Second))
}

func TestResponsesTextAndTool(t *testing.T) {
	s := newServer(t)
	c := respClient(s)
	ctx := context.Background()
	r, err := c.Responses.New(ctx, responses.ResponseNewParams{
		Model: "gpt-5", Instructions: openai.String("Be brief."),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi fake:thinking fake:cached=8")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.OutputText() != "echo: hi fake:thinking fake:cached=8" || r.Status != "completed" || r.Usage.InputTokensDetails.CachedTokens != 8 {
		t.Errorf("%s", r.RawJSON())
	}
	if rs := r.Output[0].AsReasoning(); r.Output[0].Type != "reasoning" || rs.EncryptedContent == "" || len(rs.Summary) != 1 {
		t.Errorf("reasoning item %s", r.Output[0].RawJSON())
	}

	s.Script(ToolCall("get_weather", `{"city":"Paris"}`))
	r, err = c.Responses.New(ctx, responses.ResponseNewParams{
		Model: "gpt-5",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("weather?")},
		Tools: []responses.ToolUnionParam{responses.ToolParamOfFunction("get_weather", map[string]any{"type": "object"}, false)},
	})
	if err != nil {
		t.Fatal(err)
	}
	call := r.Output[0].AsFunctionCall()
	if call.Name != "get_weather" || call.Arguments != `{"city":"Paris"}` || call.CallID == "" {
		t.Errorf("%s", r.RawJSON())
	}
	out := responses.ResponseInputItemParamOfFunctionCallOutput("sunny")
	out.OfFunctionCallOutput.CallID = openai.String(call.CallID)
	r, err = c.Responses.New(ctx, responses.ResponseNewParams{
		Model: "gpt-5",
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
			responses.ResponseInputItemParamOfFunctionCall(call.Arguments, call.CallID, call.Name), out}},
	})
	if err != nil || r.OutputText() != "echo: sunny" {
		t.Errorf("tool result turn: %v %q", err, r.OutputText())
	}

	s.Script(Fail(429))
	_, err = c.Responses.New(ctx, responses.ResponseNewParams{Model: "gpt-5", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("x")}})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 429 {
		t.Errorf("scripted 429: %v", err)
	}
}

func TestResponsesStream(t *testing.T) {
	s := newServer(t)
	c := respClient(s)
	s.Script(Combine(Thinking(), ToolCall("f", `{"a":1}`), Reply("Calling f.")))
	stream := c.Responses.NewStreaming(context.Background(), responses.ResponseNewParams{
		Model: "gpt-5",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("go")},
	})
	acc := &responses.ResponseAccumulator{}
	var last string
	for stream.Next() {
		ev := stream.Current()
		var se responses.ResponsesServerEventUnion
		if err := json.Unmarshal([]byte(ev.RawJSON()), &se); err != nil {
			t.Fatal(err)
		}
		if err := acc.AddEvent(se); err != nil {
			t.Fatalf("accumulator: %v on %s", err, ev.RawJSON())
		}
		last = ev.Type
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	snap := acc.Snapshot()
	if last != "response.completed" || snap.OutputText() != "Calling f." || len(snap.Output) != 3 ||
		snap.Output[2].Type != "function_call" || snap.Output[2].Arguments != `{"a":1}` {
		t.Errorf("last %s, snapshot %+v", last, snap)
	}
}
