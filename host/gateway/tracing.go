package gateway

import (
	"github.com/bardoinference/bardo/host/telemetry/trace"
	"github.com/bardoinference/bardo/sdk/wire"
)

// routeMode is how the planner routes, for the routing span: "explicit"
// (the model's providers, in file order) or the intent's source.
func routeMode(pl *planner) string {
	switch {
	case pl == nil:
		return ""
	case pl.intent == nil:
		return "explicit"
	}
	return pl.source()
}

// attemptSpanEnd ends an upstream attempt's span with what came of it.
func attemptSpanEnd(sp trace.Span, out *attemptOutcome) {
	status := out.upStatus
	if out.resp != nil {
		status = out.resp.Status
	}
	failure := ""
	if out.err != nil {
		failure = out.err.Kind
		if failure == "" {
			failure = "error"
		}
	}
	sp.EndAttempt(status, failure, out.transient)
}

// traceEvent notes a decoded stream's id and finish reason for a traced
// request's span.
func traceEvent(s *Settlement, ev *wire.Event) {
	if s.trace == nil {
		return
	}
	switch {
	case ev.Type == wire.EventMessageStart && ev.ID != "":
		s.streamID = ev.ID
	case ev.Type == wire.EventMessageDelta && ev.StopReason != "":
		s.streamFinish = ev.StopReason
	}
}

// endTrace ends a traced request's span with its settlement.
func endTrace(s *Settlement) {
	o := trace.Outcome{
		Status: s.Status, Path: string(s.Path), Provider: s.Provider, Model: s.Model, Cache: s.Cache,
		Streamed: s.Streamed, StreamEnd: string(s.StreamEnd), Usage: s.Usage, Response: s.resp, Err: s.Err,
		Tried: s.Tried, Degraded: s.Degraded, FirstByte: s.FirstByte, Latency: s.Latency,
		ResponseID: s.streamID, FinishReason: s.streamFinish,
	}
	if b := s.Bill; b != nil {
		o.Billed = true
		o.CostMicros, o.ChargeMicros, o.SavingsMicros = int64(b.Figures.Cost), int64(b.Figures.Charge), int64(b.Figures.Savings)
	}
	s.trace.End(&o)
}
