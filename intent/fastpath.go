package intent

// Fast-path kinds (FastReply.Kind).
const (
	KindGreeting = "greeting"
	KindThanks   = "thanks"
	KindAck      = "ack"
)

// FastReply is the instant answer to a greeting or an acknowledgement.
type FastReply struct {
	Kind     string `json:"kind"`     // KindGreeting, KindThanks or KindAck
	Reply    string `json:"reply"`    // Slack mrkdwn; "" means react only, post nothing
	Reaction string `json:"reaction"` // emoji name without colons, for reactions.add
}

const (
	fpGreet uint32 = 1 << iota
	fpMorning
	fpAfternoon
	fpEvening
	fpThanks
	fpPraise // "great job": answered like thanks
	fpAck    // "ok", "got it": a reaction is enough
	fpWarm   // "great", "perfect": a short reply is friendlier than silence
	fpLaugh
	fpBye
	fpFiller
	fpEmoji // an emoji-only message: mirrored
)

// maxFastWords bounds a fast-path message; anything longer is likely to carry a request.
const maxFastWords = 10

var fastLex = newLexicon(fpEmoji,
	group{fpGreet, []string{
		"hi", "hii", "hello", "hey", "hey there", "hi there", "hello there", "hiya", "heya", "hey hey",
		"hi hi", "hello hello", "howdy", "yo", "sup", "greetings", "hey lucy", "hi lucy", "hello lucy",
		"hey you", "👋", ":wave:",
	}},
	group{fpGreet | fpMorning, []string{"good morning", "morning", "gm", "mornin", "top of the morning"}},
	group{fpGreet | fpAfternoon, []string{"good afternoon", "afternoon"}},
	group{fpGreet | fpEvening, []string{"good evening", "evening"}},
	group{fpThanks, []string{
		"thanks", "thank you", "ty", "tysm", "tyvm", "many thanks", "much appreciated", "appreciate it",
		"appreciated", "i appreciate it", "i appreciate that", "appreciate that", "cheers", "thanks a lot",
		"thanks so much", "thank you so much", "thank you very much", "thanks a bunch", "thanks a ton",
		"thanks a million", "thanks again", "thank you again", "you're the best", "you are the best",
		"you rock", "lifesaver", "you're a lifesaver", "you are a lifesaver", "legend", "you're a legend",
		"🙏", "❤", "💙", "💚", "💜", "🥰", "😍", "🤗",
		":pray:", ":heart:", ":blue_heart:", ":green_heart:", ":purple_heart:", ":yellow_heart:",
		":orange_heart:", ":hearts:", ":two_hearts:", ":heart_eyes:", ":smiling_face_with_3_hearts:",
		":hugging_face:", ":bow:",
	}},
	group{fpPraise, []string{
		"great job", "good job", "nice job", "great work", "nice work", "good work", "well done", "nice one",
		"amazing work", "awesome work", "amazing job", "awesome job", "excellent work", "love it",
		"loved it", "love this", "love that", "this is great", "that's great", "that is great",
		"that's perfect", "this is perfect", "that's amazing", "this is amazing", "that's awesome",
		"this is awesome", "exactly what i needed", "just what i needed", "kudos", "bravo", "nailed it",
		"you nailed it", "👏", ":clap:",
	}},
	group{fpAck, []string{
		"ok", "got it", "gotcha", "noted", "understood", "roger", "roger that", "ack", "alright",
		"all right", "cool", "cool cool", "fair enough", "makes sense", "that makes sense", "will do",
		"good to know", "ah ok", "oh ok", "i see", "oh i see", "ah i see", "ah", "oh", "ok cool",
		"👍", "👌", "✅", "🆗", "💯", "🙌", "🔥", "💪", "🙂", "😊", "😀", "😄",
		":+1:", ":ok_hand:", ":white_check_mark:", ":heavy_check_mark:", ":ok:", ":100:", ":raised_hands:",
		":fire:", ":muscle:", ":slightly_smiling_face:", ":blush:", ":grinning:", ":smile:", ":smiley:",
		":sunglasses:", ":sparkles:", ":tada:", "🎉", ":partying_face:", ":wink:",
	}},
	group{fpWarm, []string{
		"great", "awesome", "perfect", "nice", "excellent", "amazing", "wonderful", "fantastic",
		"brilliant", "sweet", "neat", "sounds good", "sounds great", "looks good", "looks great", "wow",
		"very nice", "very cool", "super", "superb", "lovely", "beautiful", "great stuff", "good stuff",
	}},
	group{fpLaugh, []string{
		"lol", "haha", "lmao", "rofl", "😂", "🤣", "😆", "😅",
		":joy:", ":laughing:", ":rolling_on_the_floor_laughing:", ":sweat_smile:",
	}},
	group{fpBye, []string{
		"bye", "goodbye", "bye bye", "bye for now", "see you", "see you later", "see you tomorrow",
		"see ya", "ttyl", "talk soon", "talk later", "talk to you later", "good night", "gn", "night",
		"have a good one", "have a good day", "have a great day", "have a good weekend",
		"have a great weekend", "have a nice day", "catch you later", "you too", "same to you",
	}},
	group{fpFiller, []string{
		"lucy", "there", "all", "everyone", "everybody", "team", "folks", "yall", "y'all", "again",
		"so much", "very much", "a lot", "so", "really", "just", "and", "too", "friend", "buddy",
		"mate", "guys", "again lucy", "for that", "for this", "for the help", "for your help", "for helping",
		"much", "ah", "oh", "well", "man", "dude",
	}},
)

// controlEmoji would be a cancel or a denial, not a friendly nod: never mirrored.
var controlEmoji = map[string]bool{
	":-1:": true, ":x:": true, ":no_entry:": true, ":no_entry_sign:": true, ":octagonal_sign:": true,
	":heavy_multiplication_x:": true, ":rage:": true, ":angry:": true,
}

// FastPath answers greetings and acknowledgements without the agent loop (simple
// greetings/acks → instant reply, no agent). It matches only short messages made
// entirely of greeting, thanks, praise, acknowledgement, laughter and farewell phrases: "hi",
// "hello lucy", "good morning", "thanks!", "thank you so much", "ty", "ok", "cool", "got it",
// "great", "👍", "lol", "great job". Anything with a question or a request is not fast path ("hi,
// can you pull the Q3 numbers?", "thanks, but…", "hey?"), nor is a bare answer ("yes", "no",
// "sure"), which may be replying to a question Lucy asked.
//
// The reply is picked from a pool per kind by seed, so the same seed always gives the same reply and
// different seeds spread over the pool. Plain acknowledgements, laughter, farewells and emoji-only
// messages get Reply "" (react only). Callers check approvals, Cancel and IsStatusQuery first, and
// should not use FastPath while Lucy waits on an answer in the thread.
func FastPath(text string, seed uint64) (FastReply, bool) {
	m := parse(text)
	return fastPath(&m, seed)
}

func fastPath(m *message, seed uint64) (FastReply, bool) {
	if m.question || m.code || len(m.links) > 0 || len(m.words) == 0 || len(m.words) > maxFastWords {
		return FastReply{}, false
	}
	var bits uint32
	firstEmoji := ""
	ok := fastLex.segment(m.words, func(v uint32) { bits |= v })
	if !ok || bits&^fpFiller == 0 {
		return FastReply{}, false
	}
	if bits&fpEmoji != 0 {
		for _, w := range m.words {
			if controlEmoji[w] {
				return FastReply{}, false
			}
			if firstEmoji == "" && isEmojiTok(w) {
				firstEmoji = w
			}
		}
	}
	switch {
	case bits&fpThanks != 0:
		return FastReply{Kind: KindThanks, Reply: pick(thanksReplies, seed, 1), Reaction: "heart"}, true
	case bits&fpPraise != 0:
		return FastReply{Kind: KindThanks, Reply: pick(praiseReplies, seed, 2), Reaction: "raised_hands"}, true
	case bits&fpGreet != 0:
		r := FastReply{Kind: KindGreeting, Reaction: "wave"}
		switch {
		case bits&fpMorning != 0:
			r.Reply = "Good morning" + pick(timedGreetingTails, seed, 3)
		case bits&fpAfternoon != 0:
			r.Reply = "Good afternoon" + pick(timedGreetingTails, seed, 3)
		case bits&fpEvening != 0:
			r.Reply = "Good evening" + pick(timedGreetingTails, seed, 3)
		default:
			r.Reply = pick(greetingReplies, seed, 4)
		}
		return r, true
	case bits&fpWarm != 0:
		return FastReply{Kind: KindAck, Reply: pick(warmReplies, seed, 5), Reaction: "raised_hands"}, true
	case bits&fpLaugh != 0:
		return FastReply{Kind: KindAck, Reaction: "joy"}, true
	case bits&fpBye != 0:
		return FastReply{Kind: KindAck, Reaction: "wave"}, true
	case bits&fpAck != 0:
		return FastReply{Kind: KindAck, Reaction: "+1"}, true
	default: // emoji only, none of them known: mirror the first
		name := firstEmoji[1 : len(firstEmoji)-1]
		if firstEmoji == emojiTok {
			name = "eyes"
		}
		return FastReply{Kind: KindAck, Reaction: name}, true
	}
}

// Reply pools: short, warm, varied, no exclamation-mark pile-ups and no "As an AI". Slack renders
// :shortcodes:.
var (
	greetingReplies = []string{
		"Hey! What can I help you with?",
		"Hi there! What are we working on today?",
		"Hey :wave: What's on your mind?",
		"Hello! What can I do for you?",
		"Hi! Ready when you are. What do you need?",
		"Hey hey! What can I dig into for you?",
	}
	timedGreetingTails = []string{
		"! What can I help with today?",
		"! What's on the agenda?",
		" :wave: What can I do for you?",
		"! Ready when you are.",
	}
	thanksReplies = []string{
		"Anytime!",
		"Happy to help!",
		"Glad I could help.",
		"You're welcome! Shout if you need anything else.",
		"My pleasure!",
		"Of course! I'm here whenever you need me.",
	}
	praiseReplies = []string{
		"Thank you! Glad it hit the mark.",
		"That's great to hear!",
		"Thanks! Happy it's useful.",
		"Glad it helped! :raised_hands:",
	}
	warmReplies = []string{
		"Glad that works!",
		"Great! I'm here if you need anything else.",
		"Awesome. Ping me anytime.",
		"Nice! Let me know if anything else comes up.",
	}
)

// pick chooses an element of pool by seed. The seed is mixed (splitmix64) with a per-pool salt first,
// so that consecutive seeds (Slack timestamps differ in their last digits) still spread across the
// pool and two pools do not move in lockstep.
func pick(pool []string, seed, salt uint64) string {
	z := seed + salt*0x9E3779B97F4A7C15
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	z ^= z >> 31
	return pool[z%uint64(len(pool))]
}
