package output

import "testing"

func TestDetone(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain text unchanged", "The deploy finished at 14:02 and all checks passed.", "The deploy finished at 14:02 and all checks passed."},
		{"empty", "", ""},

		{"certainly", "Certainly! The API supports pagination.", "The API supports pagination."},
		{"certainly comma", "Certainly, the API supports pagination.", "The API supports pagination."},
		{"great question", "Great question! It depends on the plan.", "It depends on the plan."},
		{"happy to help", "I'd be happy to help with that! First, open Settings.", "First, open Settings."},
		{"curly apostrophe", "I’d be happy to help! First, open Settings.", "First, open Settings."},
		{"of course kept", "Of course! The backup covers it.", "Of course! The backup covers it."},
		{"sure kept", "Sure! I'll set it up.", "Sure! I'll set it up."},
		{"stacked openers", "Certainly! Great question! Here is the information you requested:\n• a", "• a"},
		{"sure comma kept", "Sure, I can do that.", "Sure, I can do that."},
		{"absolutely not kept", "Absolutely not. That would delete the data.", "Absolutely not. That would delete the data."},
		{"opener only at line start", "That is certainly! not filler", "That is certainly! not filler"},
		{"opener on own line", "Great question!\n\nIt depends.", "It depends."},
		{"quoted opener", "> Certainly! quoted", "> Quoted"},
		{"information requested", "Here is the information you requested:\n• a\n• b", "• a\n• b"},
		{"here's the information", "Here's the information: the flag is off.", "The flag is off."},
		{"here's what I found kept", "Here's what I found:\n• a", "Here's what I found:\n• a"},
		{"in conclusion", "In conclusion, ship it on Monday.", "Ship it on Monday."},

		{"hope this helps", "Run `make`. I hope this helps!", "Run `make`."},
		{"hope this helps own line", "Run make.\n\nHope this helps!", "Run make."},
		{"feel free generic", "The fix is merged. Feel free to reach out if you have any questions!", "The fix is merged."},
		{"feel free with content kept", "Feel free to reach out to billing@acme.com for refunds.", "Feel free to reach out to billing@acme.com for refunds."},
		{"dont hesitate", "Done. Don't hesitate to ask if you need anything else.", "Done."},
		{"let me know questions", "All set. Let me know if you have any other questions.", "All set."},
		{"let me know offer kept", "Let me know if you want me to schedule it.", "Let me know if you want me to schedule it."},
		{"if you have questions", "All set. If you have any other questions, feel free to ask!", "All set."},
		{"if you have questions with content kept", "If you have any questions about billing, email finance@acme.com.", "If you have any questions about billing, email finance@acme.com."},
		{"anything else", "Done. Is there anything else I can help you with?", "Done."},
		{"closers chained", "Done. I hope this helps! Let me know if you have any questions.", "Done."},

		{"as an ai", "As an AI, I can't browse private pages. Paste the text instead.", "I can't browse private pages. Paste the text instead."},
		{"worth noting", "It's worth noting that the cache expires hourly.", "The cache expires hourly."},
		{"important to note mid sentence", "However, it is important to note that rates change.", "However, rates change."},

		{"delve", "Let's delve into the numbers.", "Let's dig into the numbers."},
		{"delve forms", "Delving deeper, she delved into logs and delves often.", "Digging deeper, she dug into logs and digs often."},
		{"utilize", "We utilize caching and utilized queues.", "We use caching and used queues."},
		{"word inside word kept", "the delver's guild", "the delver's guild"},

		{"bangs collapse", "Wow!!! It works!!", "Wow! It works!"},
		{"interrobang", "Really?! Yes.", "Really? Yes."},
		{"two exclamations kept", "Nice! Great!", "Nice! Great!"},
		{"softened after two", "Nice! Great! Super! Amazing!", "Nice! Great! Super. Amazing."},
		{"not operator", "if a != b! then", "if a != b! then"},

		{"code block untouched", "```\nCertainly! delve!!!\n```\nCertainly! Done.", "```\nCertainly! delve!!!\n```\nDone."},
		{"tilde fence untouched", "~~~\nCertainly! delve!!!\n~~~\nCertainly! Done.", "~~~\nCertainly! delve!!!\n~~~\nDone."},
		{"code span untouched", "Type `I hope this helps!` and `delve`.", "Type `I hope this helps!` and `delve`."},
		{"slack tokens untouched", "<!here> <https://x.com/delve|delve docs> ok", "<!here> <https://x.com/delve|delve docs> ok"},
		{"url untouched", "See https://x.com/delve-into-it now.", "See https://x.com/delve-into-it now."},

		{"only filler kept", "I hope this helps!", "I hope this helps!"},
		{"only opener kept", "Certainly!", "Certainly!"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Detone(tt.in); got != tt.want {
				t.Errorf("Detone(%q)\ngot:  %q\nwant: %q", tt.in, got, tt.want)
			}
		})
	}
}
