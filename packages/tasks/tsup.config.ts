import { packageBuild } from "../../tsup.base";

// croner computes the ticks of cron schedules; it is bundled (MIT, see THIRD_PARTY_NOTICES.md).
export default packageBuild({ bundled: ["croner"] });
