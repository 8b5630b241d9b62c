//! MCP method names and HTTP header names, spelled once.

pub const INITIALIZE: &str = "initialize";
pub const INITIALIZED: &str = "notifications/initialized";
pub const PING: &str = "ping";
pub const SERVER_DISCOVER: &str = "server/discover";
pub const TOOLS_LIST: &str = "tools/list";
pub const TOOLS_CALL: &str = "tools/call";
pub const PROMPTS_LIST: &str = "prompts/list";
pub const PROMPTS_GET: &str = "prompts/get";
pub const RESOURCES_LIST: &str = "resources/list";
pub const RESOURCES_TEMPLATES_LIST: &str = "resources/templates/list";
pub const RESOURCES_READ: &str = "resources/read";
pub const RESOURCES_SUBSCRIBE: &str = "resources/subscribe";
pub const RESOURCES_UNSUBSCRIBE: &str = "resources/unsubscribe";
pub const COMPLETION_COMPLETE: &str = "completion/complete";
pub const LOGGING_SET_LEVEL: &str = "logging/setLevel";
pub const SUBSCRIPTIONS_LISTEN: &str = "subscriptions/listen";
/// Skills (SEP-2640, `io.modelcontextprotocol/skills`): the skills a server serves.
pub const SKILLS_LIST: &str = "skills/list";
/// Skills: one skill's entry, by the URI of its `SKILL.md`.
pub const SKILLS_GET: &str = "skills/get";
/// Skills: the direct children of a directory resource (when the server
/// declares `directoryRead`).
pub const RESOURCES_DIRECTORY_READ: &str = "resources/directory/read";

pub const NOTIF_CANCELLED: &str = "notifications/cancelled";
pub const NOTIF_PROGRESS: &str = "notifications/progress";
pub const NOTIF_MESSAGE: &str = "notifications/message";
pub const NOTIF_TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";
pub const NOTIF_PROMPTS_LIST_CHANGED: &str = "notifications/prompts/list_changed";
pub const NOTIF_RESOURCES_LIST_CHANGED: &str = "notifications/resources/list_changed";
pub const NOTIF_RESOURCES_UPDATED: &str = "notifications/resources/updated";
pub const NOTIF_SUBSCRIPTIONS_ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";

pub const HEADER_SESSION_ID: &str = "mcp-session-id";
pub const HEADER_PROTOCOL_VERSION: &str = "mcp-protocol-version";
pub const HEADER_METHOD: &str = "mcp-method";
pub const HEADER_NAME: &str = "mcp-name";
pub const HEADER_LAST_EVENT_ID: &str = "last-event-id";

/// Server→client requests a gateway relays to the client that made a call.
pub const SAMPLING_CREATE_MESSAGE: &str = "sampling/createMessage";
pub const ELICITATION_CREATE: &str = "elicitation/create";
pub const ROOTS_LIST: &str = "roots/list";

/// The client capability a server→client request needs (`None`: any client may
/// be asked).
pub fn required_capability(method: &str) -> Option<&'static str> {
    match method {
        SAMPLING_CREATE_MESSAGE => Some("sampling"),
        ELICITATION_CREATE => Some("elicitation"),
        ROOTS_LIST => Some("roots"),
        _ => None,
    }
}

pub const CONTENT_TYPE_JSON: &str = "application/json";
pub const CONTENT_TYPE_SSE: &str = "text/event-stream";

/// Reserved `_meta` keys of the 2026-07-28 revision.
pub mod meta {
    pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
    pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
    pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
    pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
    pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
    pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
    /// The prefix every reserved key of this revision shares.
    pub const RESERVED_PREFIX: &str = "io.modelcontextprotocol/";
}
