package registry

import (
	"fmt"
	"reflect"
	"testing"
)

// onePassSeeds are documents at the edges of what the one-pass reader
// takes: escapes, nulls, duplicates, case, depth, numbers, whitespace.
var onePassSeeds = []string{
	`{"name":"a\"b\\c\/d\b\f\n\r\t\u00e9\u4e2d","address":"h","port":1}`,
	`{"name":"a","address":"h","port":"-1","payload":{"metadata":{"k":"v","k":null}}}`,
	`{"name":"a","address":"h","payload":{"metadata":{"k":null,"k":"v"}}}`,
	`{"name":"a","address":"h","payload":{"metadata":{"dubbo.endpoints":"[{\"port\":20880,\"protocol\":\"dubbo\"},{\"port\":\"50051\",\"protocol\":\"tri\"}]"}}}`,
	`{"name":"a","address":"h","payload":{"metadata":{"dubbo.endpoints":"[{\"port\":0,\"protocol\":\"dubbo\"}]"}}}`,
	`{"name":"a","address":"h","payload":{"metadata":{"dubbo.metadata-service.url-params":"{\"port\":\"20881\",\"protocol\":\"dubbo\",\"version\":null}"}}}`,
	`{"name":"a","address":"h","payload":{"metadata":{"dubbo.metadata-service.url-params":"{\"dubbo\":{\"port\":\"20881\"}}"}}}`,
	`{"name":"a","address":"h","payload":{"metadata":{"dubbo.metadata-service.url-params":"null"}}}`,
	`{"name":"a","address":"h","payload":{"metadata":{"dubbo.metadata-service.url-params":"{\"port\":\"x\"}"}}}`,
	`{"name":"a","address":"h","payload":{"metadata":{},"x":[1,-2.5e+3,true,false,null,{"y":[]}]}}`,
	`{"name":"a","Name":"b","address":"h"}`,
	`{"name":"a","nam\u0065":"b","address":"h"}`,
	"{\"name\":\"a\",\"addre\u017fs\":\"h\"}",
	`{"name":"a","address":"h","port":01}`,
	`{"name":"a","address":"h","port":1.0}`,
	`{"name":"a","address":"h","port":-}`,
	`{"name":"a\ud83d\ude00","address":"h"}`,
	"{\"name\":\"a\xff\",\"address\":\"h\"}",
	"{\"name\":\"a\x01\",\"address\":\"h\"}",
	` {"name" : "a" , "address" : "h" } `,
	`{"name":"a","address":"h","deep":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}`,
	`{"app":"a","revision":"r","services":{"s":{"name":"s","protocol":"dubbo","port":20880,"params":{"b":"2","a":"1","b":"3","c":null}}}}`,
	`{"app":"a","revision":"r","services":{"s":{"name":"s"},"s":null}}`,
	`{"app":"a","revision":"r","services":{"s":null,"s":{"name":"s","port":"1"}}}`,
	`{"app":"a","revision":"r","services":{"s":{"name":"s","name":"t"}}}`,
	`{"app":"a","revision":"r","services":{"s":{"name":"s","params":null,"port":null}}}`,
	`{"app":"a","revision":"r","revision":"q"}`,
	`{"app":"a","revision":"r"}x`,
}

// FuzzAppdiscOnePass: whatever the one-pass reader takes, instance or
// metadata, parses as the precise path (encoding/json, level by level)
// parses it: the same instance or document, or the same error.
func FuzzAppdiscOnePass(f *testing.F) {
	for _, part := range []string{"instance", "metadata"} {
		for _, name := range appdiscGoldens(f, part) {
			f.Add(appdiscReadFile(f, name))
		}
	}
	for _, s := range onePassSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkOnePass(t, data)
	})
}

func checkOnePass(t *testing.T, data []byte) {
	t.Helper()
	fast, fastErr := parseInstance(data, true)
	slow, slowErr := parseInstance(data, false)
	if fmt.Sprint(fastErr) != fmt.Sprint(slowErr) || !reflect.DeepEqual(fast, slow) {
		t.Errorf("instance %q:\none pass %+v, %v\nprecise  %+v, %v", data, fast, fastErr, slow, slowErr)
	}
	m, mErr := ParseMetadataJSON(data)
	p, pErr := parseMetadataJSON(data)
	if fmt.Sprint(mErr) != fmt.Sprint(pErr) || !reflect.DeepEqual(m, p) {
		t.Errorf("metadata %q:\none pass %+v, %v\nprecise  %+v, %v", data, m, mErr, p, pErr)
	}
}

// TestAppdiscOnePassSeeds runs the fuzz seeds, and checks that the
// reader does take the usual shapes (every document of testdata and the
// seeds that are usual), so that the comparison is not vacuous.
func TestAppdiscOnePassSeeds(t *testing.T) {
	for _, s := range onePassSeeds {
		checkOnePass(t, []byte(s))
	}
	// The seeds before firstMetadataSeed are instances.
	const firstMetadataSeed = 21
	taken := func(i int, data []byte) bool {
		if i < firstMetadataSeed {
			_, _, ok := scanInstance(data)
			return ok
		}
		_, ok := scanMetadata(data)
		return ok
	}
	for _, part := range []string{"instance", "metadata"} {
		for _, name := range appdiscGoldens(t, part) {
			i := 0
			if part == "metadata" {
				i = firstMetadataSeed
			}
			if !taken(i, appdiscReadFile(t, name)) {
				t.Errorf("%s: not read in one pass", name)
			}
		}
	}
	for i, s := range onePassSeeds {
		want := i < 10 || i == 19 || i == 21 || i == 22 || i == 23 || i == 25
		if got := taken(i, []byte(s)); got != want {
			t.Errorf("seed %d %.60q: read in one pass %v, want %v", i, s, got, want)
		}
	}
	for _, tc := range []struct {
		text string
		want bool
	}{
		{`[{"port":20880,"protocol":"dubbo"}]`, true},
		{`[{"port":0,"protocol":"dubbo"}]`, false},
		{`[{"protocol":"dubbo"}]`, false},
		{`[null]`, false},
		{`[]`, true},
	} {
		if _, ok := scanEndpoints(tc.text); ok != tc.want {
			t.Errorf("endpoints %s: read in one pass %v, want %v", tc.text, ok, tc.want)
		}
	}
	for _, tc := range []struct {
		text string
		want bool
	}{
		{`{"port":"20881","protocol":"dubbo"}`, true},
		{`{"dubbo":{"port":"20881"}}`, false},
		{`{"port":20881}`, false},
		{`null`, false},
		{`{"port":"x"}`, false},
	} {
		if _, ok := scanMetadataServiceParams(tc.text); ok != tc.want {
			t.Errorf("url-params %s: read in one pass %v, want %v", tc.text, ok, tc.want)
		}
	}
}
