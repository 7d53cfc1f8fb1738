package fakeupstream

import (
	"regexp"
	"strconv"
)

// claudeVersion reads "claude-<family>-<major>[-<minor>]" (a date suffix is
// not a minor).
var claudeVersion = regexp.MustCompile(`^claude-[a-z]+-(\d+)(?:-(\d{1,2}))?(?:-\d{8})?$`)

// takesMidConversationSystem reports whether a model accepts role "system"
// messages inside messages without the beta: Claude Opus 4.8 and every
// model from generation 4.8 on. Claude Code 2.1.332 sends them, with no beta
// header, to exactly these (its own capability rule: models before
// claude-opus-4-8 do not take them), e.g. to its default claude-opus-5-5.
func takesMidConversationSystem(model string) bool {
	m := claudeVersion.FindStringSubmatch(model)
	if m == nil {
		return false
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	return major > 4 || major == 4 && minor >= 8
}
