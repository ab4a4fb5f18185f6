export {
  type CreateOptions,
  type CreatePackageManager,
  type CreateResult,
  createProject,
} from "./create-project";
export { CreateError, type CreateErrorCode, isCreateError } from "./errors";
