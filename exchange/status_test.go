package exchange

import (
	"go/ast"
	"go/parser"
	"go/token"
	"net/http/httptest"
	"regexp"
	"strconv"
	"testing"
)

// TestEveryCodeHasItsDocumentedStatus reads the Code constants of
// errors.go and the status each one's comment names, so that a new code
// cannot be added without its status, nor Status disagree with the list.
func TestEveryCodeHasItsDocumentedStatus(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "errors.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	leading := regexp.MustCompile(`^\s*//\s*(\d{3})\b`)
	seen := 0
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			if len(vs.Names) != 1 || len(vs.Values) != 1 || vs.Comment == nil {
				continue
			}
			lit, ok := vs.Values[0].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				continue
			}
			code, _ := strconv.Unquote(lit.Value)
			m := leading.FindStringSubmatch(vs.Comment.List[0].Text)
			if m == nil {
				t.Errorf("%s: its comment names no status", vs.Names[0].Name)
				continue
			}
			want, _ := strconv.Atoi(m[1])
			if got := Status(code); got != want {
				t.Errorf("Status(%s) = %d, the list says %d", vs.Names[0].Name, got, want)
			}
			seen++
		}
	}
	if seen < 20 {
		t.Fatalf("found %d codes in errors.go; the parse is wrong", seen)
	}
}

// TestUnavailableCarriesRetryAfter: every 503 the gateway makes tells the
// client when to retry, NO_PROVIDER included; a Retry-After the caller
// chose stands; other statuses carry none.
func TestUnavailableCarriesRetryAfter(t *testing.T) {
	for _, c := range []struct {
		code, preset, want string
	}{
		{CodeNoProvider, "", "1"}, {CodeShed, "", "1"}, {CodeDraining, "", "1"},
		{CodeAuthUnavailable, "", "1"}, {CodeBreakerOpen, "7", "7"},
		{CodeTimeout, "", ""}, {CodeBadRequest, "", ""},
	} {
		w := httptest.NewRecorder()
		if c.preset != "" {
			w.Header().Set("Retry-After", c.preset)
		}
		Fail(w, httptest.NewRequest("GET", "/", nil), c.code, "x")
		if got := w.Header().Get("Retry-After"); got != c.want {
			t.Errorf("%s: Retry-After %q, want %q", c.code, got, c.want)
		}
	}
}
