package plugincheck

import (
	"bufio"
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"text/template"
)

// The templates use $(.Name) for their fields: Go's own composite
// literals ({{Type: …}}) would read as template actions.
//
//go:embed templates
var templates embed.FS

// sdkModule is the module path plugins import.
const sdkModule = "github.com/bardoinference/bardo/sdk"

// ScaffoldOptions say what Scaffold writes.
type ScaffoldOptions struct {
	Kind string // "layer" or "provider"
	Name string // the plugin's name: lower case letters, digits and dashes
	Dir  string // the folder the plugin's folder is created in
	// SDK is the folder of the sdk module (a checkout's sdk/): the go.mod
	// written requires the module and replaces it with this folder, since
	// it is not published to a module proxy.
	SDK string
	// NoGoMod leaves go.mod out, for a plugin inside a module that already
	// requires the sdk (plugins/layers/<name> in this repository).
	NoGoMod bool
}

var nameRE = regexp.MustCompile(`^[a-z][a-z0-9-]{0,62}$`)

// Scaffold writes a plugin folder — README.md, main.go, main_test.go and
// go.mod — that builds to a wasm reactor, passes its own tests and the
// conformance kit. It returns the folder; it never overwrites one.
func Scaffold(o ScaffoldOptions) (string, error) {
	if o.Kind != "layer" && o.Kind != "provider" {
		return "", fmt.Errorf("plugins new: kind %q: want layer or provider", o.Kind)
	}
	if !nameRE.MatchString(o.Name) {
		return "", fmt.Errorf("plugins new: name %q: want lower-case letters, digits and dashes, starting with a letter", o.Name)
	}
	if o.Dir == "" {
		o.Dir = "."
	}
	out := filepath.Join(o.Dir, o.Name)
	if _, err := os.Stat(out); err == nil {
		return "", fmt.Errorf("plugins new: %s exists; not overwriting it", out)
	}
	data := map[string]string{
		"Name":   o.Name,
		"Title":  title(o.Name),
		"Env":    strings.ToUpper(strings.ReplaceAll(o.Name, "-", "_")),
		"Module": o.Name,
	}
	files := map[string]string{ // written file: template
		"main.go":      o.Kind + "/main.go.tmpl",
		"main_test.go": o.Kind + "/main_test.go.tmpl",
		"README.md":    o.Kind + "/README.md.tmpl",
	}
	if !o.NoGoMod {
		sdk, err := filepath.Abs(o.SDK)
		if err != nil {
			return "", err
		}
		gover, err := goVersion(filepath.Join(sdk, "go.mod"))
		if err != nil {
			return "", fmt.Errorf("plugins new: the sdk at %s: %w", sdk, err)
		}
		data["SDK"], data["GoVersion"] = sdk, gover
		files["go.mod"] = "go.mod.tmpl"
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", err
	}
	for dst, src := range files {
		text, err := fs.ReadFile(templates, "templates/"+src)
		if err != nil {
			return "", err
		}
		t, err := template.New(src).Delims("$(", ")").Option("missingkey=error").Parse(string(text))
		if err != nil {
			return "", err
		}
		var b bytes.Buffer
		if err := t.Execute(&b, data); err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(out, dst), b.Bytes(), 0o644); err != nil {
			return "", err
		}
	}
	return out, nil
}

// title turns "my-layer" into "My-Layer", for header names.
func title(name string) string {
	parts := strings.Split(name, "-")
	for i, p := range parts {
		if p != "" {
			parts[i] = strings.ToUpper(p[:1]) + p[1:]
		}
	}
	return strings.Join(parts, "-")
}

// goVersion reads the go directive of the sdk's go.mod, and checks that
// the file is the sdk's.
func goVersion(gomod string) (string, error) {
	f, err := os.Open(gomod)
	if err != nil {
		return "", err
	}
	defer f.Close()
	var module, gover string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 2 && fields[0] == "module" {
			module = fields[1]
		}
		if len(fields) == 2 && fields[0] == "go" {
			gover = fields[1]
		}
	}
	if module != sdkModule {
		return "", fmt.Errorf("%s is module %q, not %s", gomod, module, sdkModule)
	}
	if gover == "" {
		return "", fmt.Errorf("%s has no go directive", gomod)
	}
	return gover, sc.Err()
}

// FindSDK returns the sdk module's folder: dir or a parent holding
// sdk/go.mod of the sdk module (a checkout of the gateway's repository).
func FindSDK(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		for _, cand := range []string{filepath.Join(dir, "sdk"), dir} {
			if _, err := goVersion(filepath.Join(cand, "go.mod")); err == nil {
				return cand, nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no sdk module (" + sdkModule + ") found here or above")
		}
		dir = parent
	}
}
