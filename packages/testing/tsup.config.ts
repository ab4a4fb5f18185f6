import { packageBuild } from "../../tsup.base";

export default packageBuild();
