// Field numbers of the onnx.proto messages we read and write (from
// shared/onnx-spec/onnx.proto), and their names for error messages.
#pragma once

#include <cstdint>

#include "onnx/wire.h"

namespace onnxfold::proto {

enum class ModelField : uint32_t {
  kIrVersion = 1,
  kProducerName = 2,
  kProducerVersion = 3,
  kDomain = 4,
  kModelVersion = 5,
  kDocString = 6,
  kGraph = 7,
  kOpsetImport = 8,
  kMetadataProps = 14,
  kTrainingInfo = 20,
  kFunctions = 25,
  kConfiguration = 26,
};

enum class GraphField : uint32_t {
  kNode = 1,
  kName = 2,
  kInitializer = 5,
  kDocString = 10,
  kInput = 11,
  kOutput = 12,
  kValueInfo = 13,
  kQuantizationAnnotation = 14,
  kSparseInitializer = 15,
  kMetadataProps = 16,
};

enum class NodeField : uint32_t {
  kInput = 1,
  kOutput = 2,
  kName = 3,
  kOpType = 4,
  kAttribute = 5,
  kDocString = 6,
  kDomain = 7,
  kOverload = 8,
  kMetadataProps = 9,
  kDeviceConfigurations = 10,
};

enum class AttributeField : uint32_t {
  kName = 1,
  kF = 2,
  kI = 3,
  kS = 4,
  kT = 5,
  kG = 6,
  kFloats = 7,
  kInts = 8,
  kStrings = 9,
  kTensors = 10,
  kGraphs = 11,
  kDocString = 13,
  kTp = 14,
  kTypeProtos = 15,
  kType = 20,
  kRefAttrName = 21,
  kSparseTensor = 22,
  kSparseTensors = 23,
};

enum class TensorField : uint32_t {
  kDims = 1,
  kDataType = 2,
  kSegment = 3,
  kFloatData = 4,
  kInt32Data = 5,
  kStringData = 6,
  kInt64Data = 7,
  kName = 8,
  kRawData = 9,
  kDoubleData = 10,
  kUint64Data = 11,
  kDocString = 12,
  kExternalData = 13,
  kDataLocation = 14,
  kMetadataProps = 16,
};

inline constexpr wire::FieldName kModelFields[] = {
    {1, "ir_version"},     {2, "producer_name"}, {3, "producer_version"},
    {4, "domain"},         {5, "model_version"}, {6, "doc_string"},
    {7, "graph"},          {8, "opset_import"},  {14, "metadata_props"},
    {20, "training_info"}, {25, "functions"},    {26, "configuration"}};
inline constexpr wire::FieldName kGraphFields[] = {{1, "node"},
                                                   {2, "name"},
                                                   {5, "initializer"},
                                                   {10, "doc_string"},
                                                   {11, "input"},
                                                   {12, "output"},
                                                   {13, "value_info"},
                                                   {14, "quantization_annotation"},
                                                   {15, "sparse_initializer"},
                                                   {16, "metadata_props"}};
inline constexpr wire::FieldName kNodeFields[] = {
    {1, "input"},          {2, "output"},
    {3, "name"},           {4, "op_type"},
    {5, "attribute"},      {6, "doc_string"},
    {7, "domain"},         {8, "overload"},
    {9, "metadata_props"}, {10, "device_configurations"}};
inline constexpr wire::FieldName kAttributeFields[] = {{1, "name"},
                                                       {2, "f"},
                                                       {3, "i"},
                                                       {4, "s"},
                                                       {5, "t"},
                                                       {6, "g"},
                                                       {7, "floats"},
                                                       {8, "ints"},
                                                       {9, "strings"},
                                                       {10, "tensors"},
                                                       {11, "graphs"},
                                                       {13, "doc_string"},
                                                       {14, "tp"},
                                                       {15, "type_protos"},
                                                       {20, "type"},
                                                       {21, "ref_attr_name"},
                                                       {22, "sparse_tensor"},
                                                       {23, "sparse_tensors"}};
inline constexpr wire::FieldName kTensorFields[] = {
    {1, "dims"},           {2, "data_type"},      {3, "segment"},        {4, "float_data"},
    {5, "int32_data"},     {6, "string_data"},    {7, "int64_data"},     {8, "name"},
    {9, "raw_data"},       {10, "double_data"},   {11, "uint64_data"},   {12, "doc_string"},
    {13, "external_data"}, {14, "data_location"}, {16, "metadata_props"}};
inline constexpr wire::FieldName kSegmentFields[] = {{1, "begin"}, {2, "end"}};
inline constexpr wire::FieldName kSparseFields[] = {{1, "values"}, {2, "indices"}, {3, "dims"}};
inline constexpr wire::FieldName kValueInfoFields[] = {
    {1, "name"}, {2, "type"}, {3, "doc_string"}, {4, "metadata_props"}};
inline constexpr wire::FieldName kTypeFields[] = {{1, "tensor_type"},        {4, "sequence_type"},
                                                  {5, "map_type"},           {6, "denotation"},
                                                  {8, "sparse_tensor_type"}, {9, "optional_type"}};
inline constexpr wire::FieldName kTypeInnerFields[] = {{1, "elem_type"}, {2, "shape"}};
inline constexpr wire::FieldName kShapeFields[] = {{1, "dim"}};
inline constexpr wire::FieldName kDimFields[] = {
    {1, "dim_value"}, {2, "dim_param"}, {3, "denotation"}};
inline constexpr wire::FieldName kOpsetFields[] = {{1, "domain"}, {2, "version"}};
inline constexpr wire::FieldName kStringPairFields[] = {{1, "key"}, {2, "value"}};
inline constexpr wire::FieldName kTrainingFields[] = {
    {1, "initialization"}, {2, "algorithm"}, {3, "initialization_binding"}, {4, "update_binding"}};
inline constexpr wire::FieldName kFunctionFields[] = {
    {1, "name"},         {4, "input"},     {5, "output"},
    {6, "attribute"},    {7, "node"},      {8, "doc_string"},
    {9, "opset_import"}, {10, "domain"},   {11, "attribute_proto"},
    {12, "value_info"},  {13, "overload"}, {14, "metadata_props"}};

}  // namespace onnxfold::proto
