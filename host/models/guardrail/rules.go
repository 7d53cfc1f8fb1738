package guardrail

import (
	"math/bits"
	"regexp"
	"strings"
)

// Rule is one heuristic of the injection rule set: a pattern, why it
// indicates an injection, and the score it contributes when it matches.
//
// Rule scores combine as a noisy-OR, 1 - Π(1 - score) over the distinct
// rules that fired, so one strong rule (≥ 0.8) decides on its own, while a
// weak one (< 0.5) — a pattern legitimate text also uses, such as a fake
// chat-role tag or "send … to 0x…" — only counts together with others.
type Rule struct {
	// Name identifies the rule in results ("ignore-instructions").
	Name string
	// Score is the rule's contribution in [0, 1].
	Score float32
	// Why explains what the rule catches and why it is a signal.
	Why string
	// Pattern is the RE2 pattern (case-insensitive unless it says otherwise).
	Pattern string

	// re is the whole pattern compiled; matching uses parts, and the tests
	// check the two agree.
	re *regexp.Regexp
	// negatable rules do not fire when the match is preceded in its sentence
	// by a negation ("never share your seed phrase").
	negatable bool
	// also, when set, must match somewhere in the text too.
	also *regexp.Regexp
	// parts are the pattern's top-level alternatives, compiled separately:
	// small programs run faster and each has its own prefilter.
	parts []rulePart
}

// rulePart is one top-level alternative of a rule's pattern.
type rulePart struct {
	re *regexp.Regexp
	// filter gates the regexp (see prefilter.go).
	filter filter
	// oneLine is set when no match can cross a line: the pattern matches
	// no '\n' and has no ^ or $ of the whole text (see oneLine).
	oneLine bool
}

// The rule table. Scores were set by judgement of how often legitimate text
// contains the pattern, then checked against the labelled set in
// host/models/testdata/injection (the README has the numbers). Verbs allow a
// few words between them and their object (`(?:\s+\S+){0,4}?`) so light
// rephrasing still matches, but never cross a sentence end.
var rules = []*Rule{
	{
		Name: "ignore-instructions", Score: 0.9,
		Why: "Tells the model to drop its instructions: the canonical direct injection (\"ignore all previous instructions\"), including the multilingual forms.",
		Pattern: `\b(?:ignor(?:e|es|ing)|disregard(?:s|ing)?|forget(?:ting)?|skip|bypass(?:ing)?|neglect)\b(?:[ \t]+[^\s.!?]+){0,4}?[ \t]+(?:instructions?|prompts?|rules|directives?|guidelines|guardrails|directions|commands|polic(?:y|ies)|constraints|restrictions|programming|context)\b` +
			`|\b(?:ignor(?:e|ing)|disregard(?:ing)?|forget(?:ting)?)[ \t]+(?:all[ \t]+|everything[ \t]+)?(?:of[ \t]+)?(?:the[ \t]+)?(?:above|everything|all[ \t]+(?:of[ \t]+)?(?:the[ \t]+)?(?:above|previous|prior))\b` +
			`|\b(?:ignore[zr]?|oublie[zr]?|ignora[rn]?|olvida[rn]?|vergiss|ignorier(?:e|en))\b[^.\n]{0,40}\b(?:instructions?|instrucciones|istruzioni|anweisungen|regeln|r\x{e8}gles|reglas)\b` +
			`|\b(?:overrides?|overriding|supersedes?|replaces?)[ \t]+(?:your|the|all|any)[ \t]+(?:\w+[ \t]+)?(?:instructions|guidelines|rules|polic(?:y|ies)|system prompt)\b` +
			`|\b(?:ignore|disregard|forget|drop|abandon|discard|set aside|throw out)[ \t]+(?:whatever|everything|anything|what|all)[ \t]+(?:that[ \t]+)?(?:your|the)[ \t]+(?:\w+[ \t]+)?(?:operator|developers?|creators?|company|owner|admin\w*|system|programmers?)[ \t]+(?:told|said|gave|instructed|wrote|asked)\b` +
			`|\b(?:vergiss|vergessen sie|oublie|oubliez|olvida|dimentica)[ \t]+(?:alles|tout|todo|tutto)\b`,
	},
	{
		Name: "role-override", Score: 0.8,
		Why: "Replaces the model's identity or lifts its restrictions (DAN, \"developer mode\", \"you are now …\", \"no ethical guidelines\").",
		Pattern: `\b(?:you are|you're)[ \t]+now[ \t]+(?:an?[ \t]+|in[ \t]+|the[ \t]+)?(?:\w+[ \t]+){0,2}?(?:unrestricted|unfiltered|uncensored|jailbroken|evil\w*|dan|\w+gpt|\w*bot|mode)\b` +
			`|\byou are no longer[ \t]+(?:bound|restricted|limited|required|an ai|chatgpt)\b` +
			`|\b(?:you are|you're)[ \t]+no longer[ \t]+(?:the|an?|my|our)[ \t]+(?:\w+[ \t]+){0,3}?(?:bot|assistant|agent|ai|chatbot|model)\b` +
			`|\b(?:act|pretend|behave)[ \t]+(?:to be|as|like)[ \t]+(?:an?[ \t]+)?(?:\w+[ \t]+){0,2}?(?:unrestricted|unfiltered|uncensored|jailbroken|evil)\b` +
			`|\b(?:no|without(?: any)?)[ \t]+(?:ethical|moral|content|safety)(?:[ \t]+or[ \t]+(?:ethical|moral|safety))?[ \t]+(?:guidelines|restrictions|filters?|polic(?:y|ies)|limits|boundaries)\b` +
			`|\bdo anything now\b|\b(?:you are|you're|act as|pretend to be|be)[ \t]+(?:now[ \t]+)?(?-i:DAN)\b|(?-i:\bDAN)[ \t]+mode\b` +
			`|\byou(?:'ve| have)[ \t]+been[ \t]+(?:freed|unlocked|jailbroken|liberated|released from)\b` +
			`|\b(?:opposite|evil|unrestricted|unfiltered|uncensored|jailbreak|chaos|no-limits)[ \t]+mode\b` +
			`|\b(?:whatever|anything|everything)[ \t]+(?:your|the)[ \t]+(?:rules|guidelines|polic(?:y|ies)|programming|filters?)[ \t]+(?:forbid|prohibit|block|don'?t allow|do not allow)\b` +
			`|\byour[ \t]+(?:guidelines|rules|instructions|polic(?:y|ies)|programming|restrictions)[ \t]+(?:are|is|were|have been|has been)[ \t]+(?:now[ \t]+)?(?:outdated|obsolete|void|suspended|lifted|revoked|updated|changed|removed|no longer)\b` +
			`|\bstop being[ \t]+(?:an?|the)[ \t]+(?:\w+[ \t]+){0,2}?(?:bot|assistant|ai|chatbot)\b` +
			`|\b(?:follow|obey)[ \t]+(?:only[ \t]+)?(?:my|these|the following)[ \t]+(?:rules|instructions|orders|commands)[ \t,]+(?:now|instead|from now on|only|not)\b` +
			`|\bfrom (?:now on|this moment|this point|here on)\b[^.\n]{0,40}\b(?:answer|respond to|do)[ \t]+(?:everything|anything|any request|all requests)\b` +
			`|\bcomply with (?:any|every|all)[ \t]+(?:\w+[ \t]+)?(?:requests?|instructions?|commands?)\b` +
			`|\b(?:developer|god|jailbreak|dan|maintenance|debug|sudo|admin)[ \t]+mode(?:[ \t]+(?:enabled|activated)|[ \t]*[:=][ \t]*(?:on|enabled|true|activated))\b` +
			`|\b(?:not|never|no longer)[ \t]+(?:have to|need to|required to|bound to|bound by|obliged to)[ \t]+(?:abide by|follow|obey|comply with)?[ \t]*(?:any|the|your)?[ \t]*(?:rules|guidelines|polic(?:y|ies)|restrictions)\b` +
			`|\b(?:do not|don't|never|stop)[ \t]+(?:follow|obey|adhering to|adhere to|comply with)[ \t]+(?:\w+[ \t]+){0,2}?(?:polic(?:y|ies)|rules|guidelines)\b` +
			`|\b(?:act|pretend|roleplay)[ \t]+(?:as|to be)[ \t]+my[ \t]+(?:deceased|late|dead)[ \t]+(?:grandmother|grandma|grandfather|grandpa)\b`,
	},
	{
		Name: "dan-mention", Score: 0.45,
		Why:     "Mentions DAN (\"Do Anything Now\"), the best-known jailbreak persona; security discussions name it too, so alone it stays below the threshold.",
		Pattern: `(?-i:\bDAN\b)`,
	},
	{
		Name: "unrestricted-persona", Score: 0.5,
		Why: "Imagines the model without its filters or restrictions (\"an AI without any filters\", \"if you had no restrictions\", \"stay in character no matter what\"): role-play scaffolding for jailbreaks, but also used in fiction, hence moderate.",
		Pattern: `\b(?:ai|you|assistant|chatbot|model|bot)\b[^.\n]{0,30}\b(?:without|with no|had no|have no|free (?:of|from))[ \t]+(?:any[ \t]+)?(?:filters?|restrictions|limits|limitations|censorship|guardrails)\b` +
			`|\bstay in character\b[^.\n]{0,30}\b(?:no matter what|whatever happens|at all costs|even if)\b` +
			`|\b(?:never|doesn'?t|does not|won'?t|will not)[ \t]+(?:says?|saying)[ \t]+no\b`,
	},
	{
		Name: "authority-claim", Score: 0.7,
		Why: "Claims an authority that would let it override the operator (\"SYSTEM OVERRIDE\", \"safety filters disabled by administrator\", \"I am an OpenAI engineer\").",
		Pattern: `\b(?:system override|admin override|sudo mode|root access granted|safety (?:filters?|protocols?|settings) (?:are )?(?:disabled|off|deactivated))\b` +
			`|\b(?:comes from|i am|i'm|this is)[ \t]+(?:an?[ \t]+)?(?:openai|anthropic|google|meta|microsoft)[ \t]+(?:engineer|employee|developer|staff|researcher)\b` +
			`|\b(?:i am|i'm)[ \t]+(?:your|the)[ \t]+(?:developer|creator|owner|admin(?:istrator)?|operator|programmer|maker)\b` +
			`|\b(?:give|giving|grant|granting)[ \t]+you[ \t]+permission[ \t]+to\b` +
			`|\b(?:enable|grant|activate|unlock)[ \t]+(?:admin|root|developer|god|sudo|unrestricted)[ \t]+(?:access|mode|privileges|permissions)\b`,
	},
	{
		Name: "prompt-exfiltration", Score: 0.85,
		Why: "Asks for the system prompt, hidden instructions or context window — the first step of most targeted attacks and a leak in itself.",
		Pattern: `\b(?:repeat|print|reveal|show|output|display|tell me|leak|dump|write out|give me|share|return|what (?:is|are|was|were))\b(?:[ \t]+[^\s.!?]+){0,3}?[ \t]+(?:your|the)[ \t]+(?:\w+[ \t]+)?(?:system|initial|original|hidden|secret|developer|pre-?prompt)[ \t]+(?:prompt|instructions?|message|rules|configuration|config)\b` +
			`|\b(?:repeat|print|reveal|show|output|display|dump|leak)\b(?:[ \t]+[^\s.!?]+){0,5}?[ \t]+your[ \t]+(?:prompt|configuration|config|system message)\b` +
			`|\b(?:repeat|print|output|write)\b[^.\n]{0,40}\b(?:words|text|everything|all)[ \t]+(?:above|before)\b` +
			`|\b(?:instructions|prompt|rules)[ \t]+you[ \t]+(?:were|have been)[ \t]+given\b` +
			`|\bwhat was written at the (?:beginning|start|top)\b` +
			`|\b(?:initial|first|original|opening|very first)[ \t]+(?:message|instructions?|prompt|text)[ \t]+(?:that[ \t]+)?you[ \t]+(?:received|were given|got|were sent)\b` +
			`|\b(?:contents of|everything in)[ \t]+your[ \t]+(?:context(?: window)?|memory|instructions)\b` +
			`|\b(?:output|print|reveal|dump|send|forward|repeat)[ \t]+(?:the[ \t]+|all[ \t]+|your[ \t]+)?(?:full[ \t]+|entire[ \t]+|whole[ \t]+)?(?:conversation|chat)[ \t]+(?:history|log|transcript)\b` +
			`|\b(?:instructions|rules|guidelines|directions|prompt)[ \t]+(?:that[ \t]+)?(?:your|the)[ \t]+(?:developers?|creators?|operators?|company|admins?|owners?|makers?)[ \t]+(?:gave|give|wrote|set|provided)\b` +
			`|\b(?:instructions|rules|guidelines)[ \t]+(?:were[ \t]+)?you[ \t]+(?:were[ \t]+)?(?:told|given|asked|instructed|programmed|trained)[ \t]+to\b` +
			`|\b(?:text|everything|words|content|messages?)[ \t]+(?:that[ \t]+)?(?:appears?|comes?|came|was|is)?[ \t]*(?:before|above|preceding)[ \t]+(?:my|this|the)[ \t]+first[ \t]+message\b` +
			`|\byour[ \t]+(?:hidden|secret|internal|initial|original)[ \t]+(?:configuration|config|instructions|rules|prompt|setup|directives)\b` +
			`|\b(?:your|dein(?:en)?|tu|ton|votre|il tuo)[ \t]+(?:system[ \t]?prompt|systemprompt|prompt (?:du |del |di )?sist\w*)\b` +
			`|\b(?:everything|all|what(?:ever)?)[ \t]+(?:is[ \t]+)?(?:between|inside|in)[ \t]+(?:<system>|your[ \t]+(?:context|context window|memory|system message))`,
	},
	{
		Name: "secret-exfiltration", Score: 0.6,
		Why: "Asks for passwords, API keys or credentials, or to disclose a secret in a disguised form (spelled backwards, letter by letter).",
		Pattern: `\b(?:reveal|print|output|dump|leak|spell|tell me|give me|send|post|paste|show|list)\b(?:[ \t]+[^\s.!?]+){0,4}?[ \t]+(?:the[ \t]+|all[ \t]+|any[ \t]+|your[ \t]+)?(?:stored[ \t]+|admin[ \t]+)?(?:passwords?|api keys?|credentials|admin token|access tokens?|secrets)\b` +
			`|\bpassword\b[^\n]{0,80}\b(?:backwards|in reverse|letter by letter|one letter at a time|as an acrostic|in base64)\b`,
		negatable: true,
	},
	{
		Name: "wallet-key-exfiltration", Score: 0.9,
		Why:       "Asks to reveal or send a private key, seed/recovery phrase or key files. Bardo's agents hold wallets; nothing legitimate asks the model to disclose these.",
		Pattern:   `\b(?:reveal|print|send|share|export|paste|post|output|give|type|enter|provide|tell|show|e-?mail|forward|dump|upload)\b(?:[ \t]+[^\s.!?]+){0,5}?[ \t]+(?:your[ \t]+|the[ \t]+|my[ \t]+|its[ \t]+|their[ \t]+|any[ \t]+|(?:the[ \t]+)?(?:user|wallet|agent)'?s[ \t]+)?(?:private keys?|seed phrase|recovery phrase|mnemonic(?: phrase)?|secret recovery phrase|keystore(?: file)?|wallet keys?|\.env(?: file)?|ssh keys?|~/\.ssh|(?:\d+|twelve|twenty-four)[ \t]+(?:recovery|seed|secret|mnemonic)[ \t]+words|recovery words)`,
		negatable: true,
	},
	{
		Name: "wallet-drain", Score: 0.35,
		Why:     "Moves all of a balance (\"transfer the entire balance\", \"move all funds\"). Users say this legitimately, so it only counts with other signals.",
		Pattern: `\b(?:transfer|send|move|withdraw|wire|bridge|sweep|drain)\b(?:[ \t]+[^\s.!?;]+){0,5}?[ \t]+(?:all|entire|full|whole|every|remaining|max(?:imum)?)\b(?:[ \t]+[^\s.!?;]+){0,3}?[ \t]+(?:funds|balance|tokens|eth|usdc|usdt|dai|assets|holdings|wallet|money|crypto)\b`,
	},
	{
		Name: "transfer-to-address", Score: 0.35,
		Why:     "Sends or approves funds to a literal address. A user's own agent is told this legitimately, so it only counts with other signals (e.g. inside a tool result that also addresses the AI).",
		Pattern: `\b(?:transfer|send|move|withdraw|wire|bridge|sweep|pay|approve)\b[^.\n]{0,80}\b(?:to|for spender|spender|for)\W{0,3}0x[0-9a-f]{40}\b`,
	},
	{
		Name: "unlimited-approval", Score: 0.4,
		Why: "Grants an unlimited token allowance, the usual way wallet drainers get spending rights; also common in legitimate questions, hence weak.",
		Pattern: `\bapprove\b[^.\n]{0,60}\b(?:unlimited|infinite|max(?:imum)?|uint256)\b[^.\n]{0,30}\b(?:allowance|spending|approvals?)\b` +
			`|\b(?:unlimited|infinite)[ \t]+(?:allowance|approval)\b|\bslippage to 100\s?%` +
			`|\bsign\b[^.\n]{0,40}\bpermit\b[^.\n]{0,80}\b(?:max(?:imum)?|unlimited|infinite)\b`,
	},
	{
		Name: "stealth", Score: 0.4,
		Why: "Asks to act without the user knowing (\"don't tell the user\", \"silently\", \"delete this email\"): instructions a legitimate principal rarely needs to hide.",
		Pattern: `\b(?:do not|don't|never)[ \t]+(?:tell|mention|inform|alert|notify|show)[ \t]+(?:\w+[ \t]+)?(?:the user|them|anyone|it)\b` +
			`|\bdon'?t mention it\b|\bsilently\b|\bsecretly\b|\bpre-?approved\b|\bbefore answering\b` +
			`|\bdelete (?:this|the) (?:email|message|invite)\b` +
			`|\b(?:no|without)[ \t]+(?:\w+[ \t]+)?(?:confirmation|approval)[ \t]+(?:needed|required|necessary)\b` +
			`|\b(?:don'?t|do not)[ \t]+(?:bother[ \t]+)?(?:confirm|confirming|check|checking|ask|asking)[ \t]+(?:with[ \t]+)?(?:the[ \t]+)?(?:user|owner|account owner|anyone)\b` +
			`|\b(?:the user|the owner|the account owner)[ \t]+has[ \t]+already[ \t]+(?:approved|authori[sz]ed|confirmed)\b`,
	},
	{
		Name: "new-instructions", Score: 0.6,
		Why: "Announces replacement instructions (\"New instructions:\", \"your new task is\", \"the previous instructions were a test\").",
		Pattern: `\b(?:new|updated|real|actual|revised|true|secret|hidden)[ \t]+(?:system[ \t]+)?(?:instructions?|prompt|task|objective|directive|orders)[ \t]*:` +
			`|\byour[ \t]+(?:new|real|actual|true)[ \t]+(?:task|objective|instructions?|role|purpose|goal)[ \t]+(?:is|are)\b` +
			`|\b(?:previous|above|prior|earlier)[ \t]+instructions[ \t]+(?:were|are)[ \t]+(?:only[ \t]+|just[ \t]+)?(?:a test|fake|void|null|cancelled|no longer valid)\b` +
			`|\b(?:the[ \t]+)?(?:text|message|instructions?|prompt|everything)[ \t]+above[ \t]+(?:was|were|is)[ \t]+(?:only[ \t]+|just[ \t]+)?(?:a[ \t]+)?(?:test|fake|joke|decoy)\b` +
			`|\bnow[ \t]+(?:the|my|your)[ \t]+(?:real|actual|true)[ \t]+(?:request|task|question|instructions?)\b`,
	},
	{
		Name: "addressed-to-ai", Score: 0.6,
		Why: "Text addressed to an AI reading it (\"Note to AI assistants\", \"If you are an AI model reading this\", \"Assistant, when you process this email\"): the signature of indirect injection in documents, pages and tool results.",
		Pattern: `\b(?:note|message|instructions?|attention|important|notice)[ \t]+(?:to|for)[ \t]+(?:the[ \t]+|any[ \t]+|all[ \t]+)?(?:ai|llm|language model|assistant|chatbot|autonomous agents?|ai agents?|agents|ai[ \t]+(?:models?|assistants?|reviewers?|screening tools?|systems?|agents?))\b` +
			`|\bif you are an?[ \t]+(?:ai|llm|language model|assistant|ai model|ai assistant|bot|chatbot)\b` +
			`|\b(?:ai|llm)[ \t]+(?:\w+[ \t]+)?(?:agents?|assistants?|models?)[ \t]+(?:reading|processing|summari[sz]ing|triaging|parsing|reviewing|browsing|evaluating|analy[sz]ing|handling|visiting|checking|using)\b` +
			`|\b(?:note|message|instructions?|attention|notice)[ \t]+(?:to|for)[ \t]+(?:the[ \t]+|any[ \t]+|all[ \t]+)?(?:ai|llm)[ \t]+(?:\w+[ \t]+)?(?:reviewers?|agents?|assistants?|models?|bots?|tools?|systems?)\b` +
			`|\b(?:ai|llm)[ \t]+(?:\w+[ \t]+)?(?:agents?|assistants?|models?)[ \t]*:` +
			`|\bassistant[ \t]*[,:][ \t]*(?:when|after|before|your|ignore|disregard|this is|from now)\b` +
			`|\b(?:agent|assistant)[ \t]*:[ \t]*the user has\b` +
			`|\b(?:ai|assistant|bot|agent|language model|llm|chatbot|model)s?\b[^.\n]{0,20}\b(?:reading|reads|read|processing|processes|summari[sz](?:ing|es)|parsing|parses|browsing|triaging|reviewing|scanning|indexing)[ \t]+(?:this|these)\b` +
			`|\b(?:text|notes?|instructions?|message)[ \t]+for[ \t]+(?:\w+[ \t]+)?(?:assistants|agents|bots|language models|llms|ais)\b` +
			`|\b(?:agent|assistant|ai|bot|llm|model)[ \t]+(?:instructions|directives|orders)[ \t]*:` +
			`|(?m:^[ \t>*-]*(?:language model|llm|ai model|ai agent)[ \t]*:)` +
			`|\bto (?:whatever|any|the) (?:bot|ai|assistant|agent|model)\b`,
	},
	{
		Name: "model-must", Score: 0.45,
		Why:     "States what \"the assistant must\" do in third person, as injected documents and fake system notices do; prompt designers write this legitimately too, hence weak.",
		Pattern: `\b(?:the|this)[ \t]+(?:assistant|ai|agent|model|llm)[ \t]+(?:must|shall|is required to|needs to)\b`,
	},
	{
		Name: "chat-template-token", Score: 0.6,
		Why:     "Special tokens of chat templates (<|im_start|>, <|eot_id|>, Bing's [system](#…)) have no business in user or tool text; they try to open a fake system turn.",
		Pattern: `<\|(?:im_start|im_end|system|endoftext|eot_id|start_header_id|end_header_id|begin_of_text)\|>|\[(?:system|assistant)\]\(#`,
	},
	{
		Name: "fake-delimiter", Score: 0.45,
		Why:     "Fake role tags and prompt-format headers (</system>, <system>, [INST], <<SYS>>, \"### Instruction:\"). Developers discuss these legitimately, so alone they stay below the threshold.",
		Pattern: `</?(?:system|assistant|user|instructions?|sys)>|\[/?INST\]|<</?SYS>>|(?m:^[ \t]*#{2,}[ \t]*(?:new[ \t]+|updated[ \t]+|system[ \t]+)?(?:instructions?|system(?: prompt)?|response)[ \t]*:?[ \t]*$)`,
	},
	{
		Name: "decode-and-follow", Score: 0.6,
		Why:     "Asks to decode an obfuscated payload and act on it — encoding is used to slip instructions past filters.",
		Pattern: `\b(?:decode|decrypt|deobfuscate|base64|rot13|reverse)\b[^\n]{0,80}\b(?:follow|execute|run|obey|do what|carry out|comply)\b`,
	},
	{
		Name: "safety-disable", Score: 0.5,
		Why: "Asks to switch off the model's own safety machinery.",
		Pattern: `\b(?:switch off|turn off|disable[sd]?|bypass|deactivate|remove|circumvent|skip|ignore)[ \t]+(?:the[ \t]+|your[ \t]+|its[ \t]+)?(?:own[ \t]+)?(?:content filters?|safety (?:filters?|rules|guidelines|measures|training|checks)|ethics (?:training|rules)|alignment|guardrails|moderation|censorship)\b` +
			`|\b(?:all[ \t]+)?safety (?:checks|filters|features) (?:are|is) (?:now[ \t]+)?(?:off|disabled)\b`,
	},
	{
		Name: "refusal-suppression", Score: 0.5,
		Why: "Forbids refusals or warnings, or forces a compliant opening (\"Start your reply with 'Sure'\"): jailbreak scaffolding.",
		Pattern: `\b(?:without|no)[ \t]+(?:any[ \t]+)?(?:warnings?|disclaimers?|refusals?|caveats|moralizing|censorship)\b` +
			`|\bnever[ \t]+(?:say you can'?t|refuses?|declines?)\b` +
			`|\bstart[ \t]+(?:your|the)[ \t]+(?:reply|response|answer)[ \t]+with\b`,
	},
	{
		Name: "destructive-command", Score: 0.45,
		Why:     "Asks to run a destructive or remote-code command (rm -rf, curl … | sh). Developers ask about these legitimately, so alone it stays below the threshold.",
		Pattern: `\b(?:run|execute|exec)\b[^.\n]{0,20}(?:rm -rf|curl [^|\n]+\|[ \t]*(?:sudo[ \t]+)?(?:sh|bash)|wget [^|\n]+\|[ \t]*(?:sh|bash)|chmod -R 777|mkfs|dd if=)`,
	},
	{
		Name: "exfiltrate-to-email", Score: 0.35,
		Why:     "Sends or forwards content to an e-mail address. A normal request from a user, a warning sign inside a document or tool result, hence weak.",
		Pattern: `\b(?:e-?mail|send|forward|share)[ \t]+(?:\S+[ \t]+){0,5}?to[ \t]+[\w.+-]+@[\w-]+\.[\w.]+`,
	},
	{
		Name: "tool-enumeration", Score: 0.5,
		Why:     "Asks for the agent's tool list and parameters, reconnaissance for a tool-abuse attack.",
		Pattern: `\b(?:list|enumerate|print|show)[ \t]+(?:every|all|each)[ \t]+(?:of[ \t]+)?(?:the[ \t]+|your[ \t]+)?(?:tools?|functions?)[ \t]+you[ \t]+(?:can|have)\b`,
	},
	{
		Name: "attack-canary", Score: 0.7,
		Why:     "Well-known proof-of-injection strings (\"I have been PWNED\" from HackAPrompt, \"Haha pwned\").",
		Pattern: `\b(?:i have been pwned|haha pwned)\b`,
	},
	{
		Name: "markdown-exfiltration", Score: 0.8,
		Why:     "A markdown image whose URL carries a query string, in text that talks about the conversation: rendering it sends the chat to a third party.",
		Pattern: `!\[[^\]]*\]\(https?://[^\s)]+\?[^\s)]*\)`,
		also:    regexp.MustCompile(`(?i)\b(?:conversation|chat|summary|history|messages)\b`),
	},
	{
		Name: "hidden-html", Score: 0.3,
		Why: "Text hidden from a human reader (display:none, zero font size, HTML comments addressing an AI) is where indirect injections hide.",
		Pattern: `style[ \t]*=[ \t]*"[^"]*(?:display[ \t]*:[ \t]*none|font-size[ \t]*:[ \t]*0|visibility[ \t]*:[ \t]*hidden)` +
			`|<!--[^>]{0,400}\b(?:assistant|ai|agent|llm|model)\b`,
	},
}

// Weights for signals found by decoding rather than by a pattern.
const (
	scoreTagSmuggling   = 0.9 // invisible Unicode tag characters carrying text
	scoreEncodedPayload = 0.2 // base64 text that decodes to readable text
)

var negation = regexp.MustCompile(`(?i)\b(?:never|not|don'?t|do not|no one should)\b`)

func init() {
	for _, r := range rules {
		r.re = regexp.MustCompile(`(?i)` + r.Pattern)
		for _, alt := range splitAlternatives(r.Pattern) {
			p := `(?i)` + alt
			r.parts = append(r.parts, rulePart{re: regexp.MustCompile(p), filter: patternFilter(p), oneLine: oneLine(p)})
		}
	}
	vocabularyFilter = patternFilter(attackVocabulary.String())
	for i := range mlCompiledRules {
		mlCompiledRules[i].compileFilter()
	}
	literals.ac = newAutomaton(literals.list)
	ruleGate = newGate() // once every literal has its id
}

// Rules returns the rule table (copies; the compiled patterns stay private).
func Rules() []Rule {
	out := make([]Rule, len(rules))
	for i, r := range rules {
		out[i] = Rule{Name: r.Name, Score: r.Score, Why: r.Why, Pattern: r.Pattern}
	}
	return out
}

// gate names, for each prefilter literal, the rules it can let through:
// those with a part whose filter's first clause holds the literal (a part
// passes only if that clause has a literal in the text). The rules whose
// literals a text lacks are then skipped without reading their parts' filters:
// on a request's trip through the gateway each of those ~100 filters is a
// cache miss, and a short user turn lets 0–3 of 26 rules through.
type gate struct {
	byLiteral []uint64 // literal id → bit set of rules (bit i: rules[i])
	always    uint64   // rules with a part that has no filter
}

var ruleGate gate

func newGate() gate {
	if len(rules) > 64 {
		panic("guardrail: more than 64 rules: widen gate")
	}
	g := gate{byLiteral: make([]uint64, len(literals.list))}
	for ri, r := range rules {
		for _, p := range r.parts {
			if len(p.filter) == 0 {
				g.always |= 1 << ri
				continue
			}
			for _, id := range p.filter[0] {
				g.byLiteral[id] |= 1 << ri
			}
		}
	}
	return g
}

// candidates is the set of rules that may fire on a text with the
// literals fd: a superset of those r.match lets through.
func (g *gate) candidates(fd found) uint64 {
	c := g.always
	for w, word := range fd {
		for ; word != 0; word &= word - 1 {
			c |= g.byLiteral[w<<6|bits.TrailingZeros64(word)]
		}
	}
	return c
}

// match reports whether r fires on sc's text, with the matched snippet.
// It is equivalent to matching the whole pattern (r.re), part by part.
func (r *Rule) match(sc *scanned) (start, end int, ok bool) {
	text := sc.text
	also := r.also == nil
	for _, p := range r.parts {
		if !p.filter.pass(sc.found) {
			continue
		}
		if !also {
			if !r.also.MatchString(text) {
				return 0, 0, false
			}
			also = true
		}
		if p.oneLine && strings.IndexByte(text, '\n') >= 0 {
			// Every match lies in one line, so the leftmost is in the
			// first line that has one: only lines with the part's
			// literals are searched, each alone. A line ends at '\n' or
			// the text's end, where \b, (?m:^) and (?m:$) see the same
			// as in the whole text.
			sc.cutLines()
			for i, off := range sc.lineStart {
				if !p.filter.pass(sc.lineFound[i]) {
					continue
				}
				if st, en, ok := r.find(p.re, text, off, sc.line(i)); ok {
					return st, en, true
				}
			}
			continue
		}
		if st, en, ok := r.find(p.re, text, 0, text); ok {
			return st, en, true
		}
	}
	return 0, 0, false
}

// find returns the first match of re in s = text[off:off+len(s)] that
// counts (one not negated, for a negatable rule), in text's positions.
func (r *Rule) find(re *regexp.Regexp, text string, off int, s string) (start, end int, ok bool) {
	if !r.negatable {
		if loc := re.FindStringIndex(s); loc != nil {
			return off + loc[0], off + loc[1], true
		}
		return 0, 0, false
	}
	for _, loc := range re.FindAllStringIndex(s, -1) {
		if !negated(text, off+loc[0]) {
			return off + loc[0], off + loc[1], true
		}
	}
	return 0, 0, false
}

// scanned is a text ready for the rules: the prefilter literals it
// contains and, cut on first use, its lines with theirs.
type scanned struct {
	text      string
	folded    string // foldString(text)
	found     found
	lineStart []int // offsets of the lines' starts; nil until cutLines
	lineFound []found
}

func newScanned(text string) *scanned {
	folded := foldString(text)
	return &scanned{text: text, folded: folded, found: literals.scan(folded)}
}

// cutLines fills lineStart and lineFound. Folding maps '\n' to itself and
// nothing else to it, so the folded text's lines are the lines' foldings.
func (sc *scanned) cutLines() {
	if sc.lineStart != nil {
		return
	}
	n := strings.Count(sc.text, "\n") + 1
	words := (len(literals.list) + 63) / 64
	all := make(found, n*words)
	sc.lineStart = make([]int, 0, n)
	sc.lineFound = make([]found, 0, n)
	off, foff := 0, 0
	for i := 0; i < n; i++ {
		sc.lineStart = append(sc.lineStart, off)
		fd := all[i*words : (i+1)*words]
		end, fend := len(sc.text), len(sc.folded)
		if k := strings.IndexByte(sc.text[off:], '\n'); k >= 0 {
			end = off + k
			fend = foff + strings.IndexByte(sc.folded[foff:], '\n')
		}
		literals.ac.scan(sc.folded[foff:fend], fd)
		sc.lineFound = append(sc.lineFound, fd)
		off, foff = end+1, fend+1
	}
}

// line returns line i without its '\n'.
func (sc *scanned) line(i int) string {
	s := sc.text[sc.lineStart[i]:]
	if k := strings.IndexByte(s, '\n'); k >= 0 {
		s = s[:k]
	}
	return s
}

// negated reports whether the sentence before position i (at most 40 bytes)
// contains a negation word.
func negated(text string, i int) bool {
	start := max(0, i-40)
	before := text[start:i]
	if k := strings.LastIndexAny(before, ".!?\n"); k >= 0 {
		before = before[k+1:]
	}
	return negation.MatchString(before)
}

// Hit is one rule that fired.
type Hit struct {
	// Rule is the rule's name.
	Rule string `json:"rule"`
	// Score is the rule's contribution.
	Score float32 `json:"score"`
	// View is "" when the rule matched the text as given, or the decoding
	// that exposed it: "unicode-tags", "base64", "rot13" or "leet".
	View string `json:"view,omitempty"`
	// Match is the matched snippet (truncated to 80 bytes).
	Match string `json:"match"`
	// Quoted is set when the match sits inside quotation marks in a text
	// that discusses attacks ("what does 'ignore previous instructions'
	// do?"): Score is then half the rule's (see quotedDiscussion).
	Quoted bool `json:"quoted,omitempty"`
	// InCode is set when the match starts on a code, config or log line
	// of a text that is mostly such lines, or in a fenced code block:
	// Score is then half the rule's (comments and messages are prose
	// lines and count in full).
	InCode bool `json:"in_code,omitempty"`
}

// RuleResult is the rule engine's verdict on one text.
type RuleResult struct {
	// Score is the noisy-OR of the fired rules' scores, in [0, 1).
	Score float32
	// Hits lists each rule that fired, once (with the first view it fired
	// on): rules on the text as given first, then decoding signals and rules
	// on the decoded views.
	Hits []Hit
	// Decoded holds hidden text recovered from the input (Unicode tag
	// characters, base64, and ROT13/leetspeak views that triggered a rule),
	// which the classifier appends to what the model scores.
	Decoded []string

	layout layout // the text's prose and code lines (context.go)
	found  found  // the prefilter literals in the text as given
}

// ScoreRules runs the rule table over text and over the decodings of it
// that can hide instructions (see views.go).
func ScoreRules(text string) RuleResult {
	var res RuleResult
	res.layout = proseView(text)
	fired := make(map[string]bool)
	discussing := -1 // unknown until a rule fires
	scan := func(view string, sc *scanned) bool {
		s := sc.text
		any := false
		cand := ruleGate.candidates(sc.found)
		for ri, r := range rules {
			if cand&(1<<ri) == 0 || fired[r.Name] {
				continue
			}
			if st, en, ok := r.match(sc); ok {
				fired[r.Name] = true
				any = true
				h := Hit{Rule: r.Name, Score: r.Score, View: view, Match: truncate(s[st:en], 80)}
				if view == "" && inRanges(st, res.layout.codeLines) {
					h.Score, h.InCode = r.Score/2, true
				} else if view == "" && quoted(s, st, en) {
					if discussing < 0 {
						discussing = 0
						if discussesAttacks(sc.folded) {
							discussing = 1
						}
					}
					if discussing == 1 {
						h.Score, h.Quoted = r.Score/2, true
					}
				}
				res.Hits = append(res.Hits, h)
			}
		}
		return any
	}
	sc := newScanned(text)
	res.found = sc.found
	scan("", sc)
	res.Hits = scoreMultilingual(text, sc.found, fired, res.Hits)

	if hidden, ok := decodeTags(text); ok {
		res.Decoded = append(res.Decoded, hidden)
		res.Hits = append(res.Hits, Hit{Rule: "unicode-tag-smuggling", Score: scoreTagSmuggling, View: "unicode-tags", Match: truncate(hidden, 80)})
		scan("unicode-tags", newScanned(hidden))
	}
	payloads := decodeBase64Payloads(text)
	for _, p := range payloads {
		res.Decoded = append(res.Decoded, p)
		scan("base64", newScanned(p))
	}
	if len(payloads) > 0 {
		res.Hits = append(res.Hits, Hit{Rule: "encoded-payload", Score: scoreEncodedPayload, View: "base64", Match: truncate(payloads[0], 80)})
	}
	if looksROT13(text) {
		if r := rot13(text); scan("rot13", newScanned(r)) {
			res.Decoded = append(res.Decoded, r)
		}
	}
	if l, ok := unleet(text); ok && scan("leet", newScanned(l)) {
		res.Decoded = append(res.Decoded, l)
	}

	// Hits combine as a noisy-OR, except quoted ones (an attack quoted in
	// a discussion of attacks): only the strongest of those counts, so a
	// question quoting three attack phrases does not add them up.
	keep, quotedMax := float32(1), float32(0)
	for _, h := range res.Hits {
		if h.Quoted {
			quotedMax = max(quotedMax, h.Score)
			continue
		}
		keep *= 1 - h.Score
	}
	res.Score = 1 - keep*(1-quotedMax)
	return res
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
