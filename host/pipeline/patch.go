package pipeline

import "github.com/bardoinference/bardo/sdk/wire"

// keepExtras carries the caller's unknown members (wire Extra of system
// blocks, messages, their blocks and tools) from dst, the request as it
// is, over to src, a layer's replacement parts, wherever src has none for
// what is recognisably the same element. A layer cannot know those members,
// so it has no reason to remove them; but a plugin built before ABI v1.4
// never sends them back, and one that builds a fresh Block or Tool (a
// masked text, a summary) leaves them out. Tools are matched by name,
// system blocks and messages by position when their count did not change
// (and their type or role did not either).
func keepExtras(dst, src *wire.Request, parts wire.Part) {
	if parts&wire.PartTools != 0 {
		for i := range src.Tools {
			t := &src.Tools[i]
			if t.Extra != nil {
				continue
			}
			for j := range dst.Tools {
				if dst.Tools[j].Name == t.Name {
					t.Extra = dst.Tools[j].Extra
					break
				}
			}
		}
	}
	if parts&wire.PartSystem != 0 {
		keepBlockExtras(dst.System, src.System)
	}
	if parts&wire.PartMessages != 0 && len(src.Messages) == len(dst.Messages) {
		for i := range src.Messages {
			s, d := &src.Messages[i], &dst.Messages[i]
			if s.Role != d.Role {
				continue
			}
			if s.Extra == nil {
				s.Extra = d.Extra
			}
			keepBlockExtras(d.Content, s.Content)
		}
	}
}

func keepBlockExtras(dst, src []wire.Block) {
	if len(src) != len(dst) {
		return
	}
	for i := range src {
		if src[i].Extra == nil && src[i].Type == dst[i].Type {
			src[i].Extra = dst[i].Extra
		}
	}
}
