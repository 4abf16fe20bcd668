//! The Agent State Protocol over ACP. (Typed forms and the hub land with their issue.)
