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

// testMachine is a test tool whose domain can offer it only where the machine has what it needs
// (Offerer), as lucy_browse needs Chromium.
const testMachine = "lucy_test_machine"

var _ = Register(Def{
	Spec:     Spec{Name: testMachine, Description: "Use the machine's gadget.", Idempotent: true, Human: "using the gadget"},
	Required: []string{"path"},
	Props:    func() []Prop { return []Prop{PathProp("The file to use.")} },
}, (*machineDomain).use)

// machineDomain has the gadget or not.
type machineDomain struct{ gadget bool }

func (m *machineDomain) Offers(string) (bool, string) {
	if !m.gadget {
		return false, "no gadget is installed"
	}
	return true, ""
}

func (m *machineDomain) use(_ context.Context, inv Invocation) (Output, error) {
	if err := DecodeArgs(inv, &struct {
		Path string `json:"path"`
	}{}); err != nil {
		return Output{}, err
	}
	if !m.gadget {
		return Output{}, ArgErrorf(testMachine, "not available here: no gadget is installed")
	}
	return Output{Content: "used"}, nil
}
