package tools

import "context"

// testRead is a tool of this package's tests. The real tools are declared by their domain packages,
// which import this one, so these tests cannot link them; the catalogue as a whole is tested where
// every domain is (package toolset).
const testRead = "lucy_test_read"

var _ = Register(Def{
	Spec:     Spec{Name: testRead, Description: "Read a file of the tests.", Idempotent: true, Human: "reading a test file"},
	Required: []string{"path"},
	Props: func() []Prop {
		return []Prop{PathProp("The file to read."), IntProp("offset", "Byte offset to start reading at.", 0, MaxFileBytes)}
	},
}, (*testDomain).testRead)

// testDomain is the domain of the test tool.
type testDomain struct{}

func (*testDomain) testRead(_ context.Context, inv Invocation) (Output, error) {
	var args struct {
		Path   string `json:"path"`
		Offset int    `json:"offset"`
	}
	if err := DecodeArgs(inv, &args); err != nil {
		return Output{}, err
	}
	return ToolError("%s does not exist.", args.Path), nil
}
