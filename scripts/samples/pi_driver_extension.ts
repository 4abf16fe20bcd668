// Loaded by scripts/samples/make_pi.py with `pi -e` (never installed into the sample
// home). It gives the RPC-driven maker two things the RPC protocol has no command for,
// through Pi's own extension API, so the entries are written by Pi itself:
//   /asp-tree <entryId> [summarize]  -> ctx.navigateTree (what /tree does in the TUI)
//   /asp-label <entryId> <label...>  -> pi.setLabel   (what Shift+L does in /tree)
export default function (pi: any) {
  pi.registerCommand("asp-tree", {
    description: "sample maker: move the session leaf (like /tree)",
    handler: async (args: string, ctx: any) => {
      const [target, mode] = args.trim().split(/\s+/);
      await ctx.waitForIdle();
      await ctx.navigateTree(target, { summarize: mode === "summarize" });
    },
  });
  pi.registerCommand("asp-label", {
    description: "sample maker: label an entry (like Shift+L in /tree)",
    handler: async (args: string, _ctx: any) => {
      const [target, ...rest] = args.trim().split(/\s+/);
      pi.setLabel(target, rest.join(" ") || undefined);
    },
  });
}
